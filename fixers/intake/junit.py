"""JUnit XML, as pytest writes it (collection ``<error>`` elements included) → test outcomes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Literal
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError, iterparse

from fixers.classify.failures import Failure
from fixers.intake.errors import IntakeError
from fixers.intake.stages import gpu_type_of
from fixers.intake.testids import node_id

Outcome = Literal["passed", "failed", "error", "skipped"]
_OUTCOME_TAGS: dict[str, Outcome] = {"failure": "failed", "error": "error", "skipped": "skipped"}


@dataclass(frozen=True)
class CaseResult:
    """One test case of a JUnit report: its node id, outcome, and what it printed."""

    test_id: str
    outcome: Outcome
    message: str = ""
    text: str = ""
    output: str = ""


def iter_cases(stream: BinaryIO) -> Iterator[CaseResult]:
    """Every test case in document order; elements are freed as they are read."""
    try:
        for _event, element in iterparse(stream, events=("end",)):
            if _local(element.tag) == "testcase":
                yield _case(element)
                element.clear()
    except ParseError as exc:
        line, column = getattr(exc, "position", (0, 0))
        raise IntakeError(f"malformed JUnit XML at line {line}, column {column}: {exc}") from exc
    except DefusedXmlException as exc:
        raise IntakeError(f"refused JUnit XML: {exc} (DTDs and entities are not accepted)") from exc


def read_junit(stream: BinaryIO, *, stage: str | None = None) -> list[Failure]:
    """Every failed or errored test case as a failure."""
    return [
        Failure(
            test_id=case.test_id,
            error_text=case.message,
            stack_trace=case.text,
            stage=stage,
            gpu_type=gpu_type_of(stage),
            log_excerpt=case.output,
        )
        for case in iter_cases(stream)
        if case.outcome in ("failed", "error")
    ]


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _case(case: Element) -> CaseResult:
    test_id = node_id(case.get("classname"), case.get("name", "?"), case.get("file"))
    marker = next((child for child in case if _local(child.tag) in _OUTCOME_TAGS), None)
    outputs = [
        child.text or "" for child in case if _local(child.tag) in ("system-out", "system-err")
    ]
    output = "\n".join(text for text in outputs if text)
    if marker is None:
        return CaseResult(test_id, "passed", output=output)
    return CaseResult(
        test_id,
        _OUTCOME_TAGS[_local(marker.tag)],
        message=marker.get("message") or "",
        text=marker.text or "",
        output=output,
    )
