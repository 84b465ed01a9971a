"""JUnit XML, as pytest writes it (collection ``<error>`` elements included) → failures."""

from __future__ import annotations

from typing import BinaryIO
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError, iterparse

from fixers.failures import Failure
from fixers.intake.errors import IntakeError
from fixers.intake.testids import node_id
from fixers.stages import gpu_type_of

_PROBLEM_TAGS = ("failure", "error")


def read_junit(stream: BinaryIO, *, stage: str | None = None) -> list[Failure]:
    """Every failed or errored test case; elements are freed as they are read."""
    failures: list[Failure] = []
    try:
        for _event, element in iterparse(stream, events=("end",)):
            if _local(element.tag) != "testcase":
                continue
            failure = _case_failure(element, stage)
            if failure is not None:
                failures.append(failure)
            element.clear()
    except ParseError as exc:
        line, column = getattr(exc, "position", (0, 0))
        raise IntakeError(f"malformed JUnit XML at line {line}, column {column}: {exc}") from exc
    except DefusedXmlException as exc:
        raise IntakeError(f"refused JUnit XML: {exc} (DTDs and entities are not accepted)") from exc
    return failures


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _case_failure(case: Element, stage: str | None) -> Failure | None:
    problem = next((child for child in case if _local(child.tag) in _PROBLEM_TAGS), None)
    if problem is None:
        return None
    test_id = node_id(case.get("classname"), case.get("name", "?"), case.get("file"))
    outputs = [
        child.text or "" for child in case if _local(child.tag) in ("system-out", "system-err")
    ]
    return Failure(
        test_id=test_id,
        error_text=problem.get("message") or "",
        stack_trace=problem.text or "",
        stage=stage,
        gpu_type=gpu_type_of(stage),
        log_excerpt="\n".join(text for text in outputs if text),
    )
