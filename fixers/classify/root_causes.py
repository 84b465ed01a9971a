"""Failures → findings: one finding per root cause, with every test, stage and GPU it broke."""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Sequence
from pathlib import Path

from fixers.classify.failures import Failure, Finding
from fixers.classify.signatures import UNCLASSIFIED, Signature, builtin_signatures
from fixers.intake import FailureReport, Format, read_report
from fixers.intake.tracebacks import (
    chained_block,
    frame_defining_class,
    innermost_repository_frame,
    last_exception_line,
    pytest_reported_exception,
)
from fixers.learned.breaks import LEARNING_FIXER, breaks_of

EVIDENCE_CHARS = 2000
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def classify_failures(
    failures: Iterable[Failure],
    *,
    signatures: Sequence[Signature] | None = None,
    repo_root: str | None = None,
) -> list[Finding]:
    """Group failures by root cause: first matching signature in order, else ``unclassified``."""
    ordered = builtin_signatures() if signatures is None else signatures
    findings: dict[Hashable, Finding] = {}
    representative: dict[Hashable, str] = {}
    for failure in failures:
        key, finding = _classify_one(failure, ordered, repo_root)
        merged = findings.setdefault(key, finding)
        test_id = failure.test_id or ""
        if key not in representative or test_id < representative[key]:
            # Frame and evidence come from the first affected test in id order: stable output
            # whatever order the CI happened to report the failures in.
            representative[key] = test_id
            # A learned break's failures may name different classes: the representative's.
            merged.message, merged.class_name, merged.captures = (
                finding.message,
                finding.class_name,
                finding.captures,
            )
            merged.frame, merged.class_frame, merged.evidence = (
                finding.frame,
                finding.class_frame,
                finding.evidence,
            )
            merged.log_line = failure.log_line
        _add_occurrence(merged, failure)
    for finding in findings.values():
        finding.tests.sort()
    return sorted(findings.values(), key=_finding_order)


def classify_report(report: FailureReport, *, repo_root: str | None = None) -> list[Finding]:
    """Classify every failure of a report."""
    return classify_failures(report.failures, repo_root=repo_root)


def classify_file(
    path: Path,
    *,
    format: Format | None = None,
    stage: str | None = None,
    repo_root: str | None = None,
) -> list[Finding]:
    """Read a report file in any supported format and classify it."""
    with path.open("rb") as stream:
        report = read_report(stream, format=format, stage=stage)
    return classify_report(report, repo_root=repo_root)


def _classify_one(
    failure: Failure, signatures: Sequence[Signature], repo_root: str | None
) -> tuple[Hashable, Finding]:
    text = failure.full_text
    for signature in signatures:
        if not signature.scan and failure.test_id is not None:
            continue  # a job's failure (lint, no tests ran) is never a test's
        match = signature.search(text)
        if match is not None:
            return _signature_finding(signature, match, text, repo_root)
    return _unclassified_finding(failure, text, repo_root)


def _signature_finding(
    signature: Signature, match: re.Match[str], text: str, repo_root: str | None
) -> tuple[Hashable, Finding]:
    captures = {name: value for name, value in match.groupdict().items() if value is not None}
    block = chained_block(text, match.start())
    frame = innermost_repository_frame(block, repo_root)
    finding = Finding(
        signature=signature.id,
        fixer=signature.fixer,
        exception_type=signature.exception,
        message=_line_at(text, match.start()),
        class_name=captures.get("cls"),
        captures=captures,
        missing_methods=_method_names(captures.get("methods", "")),
        frame=frame,
        class_frame=frame_defining_class(block, captures["cls"], repo_root)
        if "cls" in captures
        else None,
        evidence=_excerpt(text, match.start()),
    )
    return _root_cause_key(signature.id, finding), finding


def _root_cause_key(signature_id: str, finding: Finding) -> Hashable:
    """What failures of one root cause share. A contract break to learn is one root cause
    whatever class the log names (every subclass the contract commit missed fails the same
    way, and one learning repairs them all: ``fixers.learned``); otherwise the captures."""
    brk = next(iter(breaks_of([finding])), None) if finding.fixer == LEARNING_FIXER else None
    if brk is not None:
        return (LEARNING_FIXER, brk.kind, finding.missing_methods or brk.method, brk.keyword)
    return (signature_id, tuple(sorted(finding.captures.items())))


def _unclassified_finding(
    failure: Failure, text: str, repo_root: str | None
) -> tuple[Hashable, Finding]:
    exception = (
        last_exception_line(failure.error_text)
        or last_exception_line(text)
        or pytest_reported_exception(failure.stack_trace, failure.error_text)
    )
    frame = innermost_repository_frame(chained_block(text, len(text)), repo_root)
    message = str(exception) if exception else (failure.error_text.strip().splitlines() or [""])[0]
    finding = Finding(
        signature=UNCLASSIFIED,
        fixer=None,
        exception_type=exception.type if exception else None,
        message=message,
        frame=frame,
        evidence=_excerpt(failure.stack_trace or text, len(failure.stack_trace or text)),
    )
    key = (UNCLASSIFIED, _ADDRESS.sub("0x…", message)[:300], frame.location() if frame else None)
    return key, finding


def _add_occurrence(finding: Finding, failure: Failure) -> None:
    for values, value in (
        (finding.tests, failure.test_id),
        (finding.stages, failure.stage),
        (finding.gpu_types, failure.gpu_type),
    ):
        if value and value not in values:
            values.append(value)


def _finding_order(finding: Finding) -> tuple[bool, int, str]:
    return (finding.signature == UNCLASSIFIED, -len(finding.tests), finding.message)


def _method_names(methods: str) -> tuple[str, ...]:
    return tuple(name.strip().strip("'\"") for name in methods.split(",") if name.strip())


def _line_at(text: str, position: int) -> str:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    line = text[start : end if end != -1 else len(text)].strip()
    return line[1:].strip() if line.startswith("E ") else line


def _excerpt(text: str, position: int) -> str:
    """About ``EVIDENCE_CHARS`` of text ending a little after ``position``, on line boundaries."""
    end = text.find("\n", position)
    end = len(text) if end == -1 else end
    start = max(0, end - EVIDENCE_CHARS)
    if start:
        start = text.find("\n", start) + 1
    return text[start:end].strip("\n")
