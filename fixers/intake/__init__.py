"""Reading a CI failure report in any supported format into a list of failures."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from io import BytesIO
from typing import Any, BinaryIO

from fixers.classify.failures import Failure
from fixers.intake.analysis import FailureAnalysis, failures_from_analysis, parse_analysis
from fixers.intake.blocks import refuse_nul
from fixers.intake.console import read_console, read_console_stream
from fixers.intake.errors import IntakeError
from fixers.intake.jenkins_tests import failures_from_testreport
from fixers.intake.junit import read_junit

__all__ = [
    "FailureReport",
    "Format",
    "IntakeError",
    "detect_format",
    "read_report",
    "screen_report",
    "screens_in_place",
]

MAX_DOCUMENT_BYTES = 64 << 20
_PEEK_BYTES = 64 << 10
_BOM = b"\xef\xbb\xbf"
# A JSON array, not a `[2026-11-29T…]` timestamp or `[Pipeline]` line.
_JSON_ARRAY = re.compile(rb"\[\s*(?:[\[{\"\]]|-?\d+(?:\.\d+)?\s*[,\]])")


class Format(StrEnum):
    """The input formats repairbot reads."""

    ANALYSIS = "analysis"
    TESTREPORT = "testreport"
    JUNIT = "junit"
    CONSOLE = "console"


@dataclass
class FailureReport:
    """What one CI report says: its failures, the stages it ran, its metadata if it had any."""

    format: Format
    failures: list[Failure]
    stages: list[str] = field(default_factory=list)
    analysis: FailureAnalysis | None = None
    notes: list[str] = field(default_factory=list)


def detect_format(head: bytes) -> Format:
    """Guess the format from the first bytes: JSON object, XML, or console text."""
    text = head.removeprefix(_BOM).lstrip()
    if text.startswith(b"{") or _JSON_ARRAY.match(text):
        return Format.ANALYSIS  # refined to TESTREPORT once the document is decoded
    if text.startswith(b"<"):
        return Format.JUNIT
    return Format.CONSOLE


def read_report(
    stream: BinaryIO, *, format: Format | None = None, stage: str | None = None
) -> FailureReport:
    """Read a report from a binary stream; console text is streamed, documents are size-capped."""
    head = stream.read(_PEEK_BYTES)
    if not head.strip():
        return FailureReport(
            format or Format.CONSOLE, [], notes=["empty input: nothing to classify"]
        )
    chosen = format or detect_format(head)
    if chosen is Format.CONSOLE:
        result = read_console_stream(stream, head, stage=stage)  # NUL bytes refused as it reads
        return FailureReport(Format.CONSOLE, result.failures, result.stages, notes=result.notes)
    refuse_nul(head, 0)
    rest = _read_capped(stream, MAX_DOCUMENT_BYTES - len(head))
    refuse_nul(rest, len(head))
    body = head.removeprefix(_BOM) + rest
    if chosen is Format.JUNIT:
        return FailureReport(Format.JUNIT, read_junit(BytesIO(body), stage=stage), _stages(stage))
    return _read_json_report(body, chosen if format else None, stage)


def screens_in_place(body: bytes, format: Format | None = None) -> bool:
    """Whether :func:`screen_report` only checks ``body`` (console text: one scan for NUL,
    no parse), cheap enough to run on an event loop; a document it reads whole."""
    return (format or detect_format(body[:_PEEK_BYTES])) is Format.CONSOLE


def screen_report(
    body: bytes, *, format: Format | None = None, stage: str | None = None
) -> FailureReport:
    """What intake must know before storing a report, at the least cost.

    A document (JSON, JUnit XML) is read whole: its metadata identifies the report. Console text
    is only checked (``IntakeError`` for a NUL byte, as :func:`read_report` would raise); its
    failures are left empty, for triage to read, since triage reads the stored body anyway.
    """
    chosen = format or detect_format(body[:_PEEK_BYTES])
    if chosen is not Format.CONSOLE or not body or body.isspace():  # isspace: no 1 MB copy
        return read_report(BytesIO(body), format=format, stage=stage)
    refuse_nul(body, 0)
    return FailureReport(Format.CONSOLE, [], _stages(stage), notes=["failures read at triage"])


def _read_json_report(body: bytes, forced: Format | None, stage: str | None) -> FailureReport:
    document = _decode_json(body)
    if not isinstance(document, dict):
        raise IntakeError(f"expected a JSON object at the top level, got {type(document).__name__}")
    kind = forced or (Format.TESTREPORT if "suites" in document else Format.ANALYSIS)
    if kind is Format.TESTREPORT:
        return FailureReport(kind, failures_from_testreport(document, stage=stage), _stages(stage))
    if kind is not Format.ANALYSIS:
        raise IntakeError(f"a JSON document cannot be read as {kind.value}")
    analysis = parse_analysis(document)
    failures = failures_from_analysis(analysis)
    notes: list[str] = []
    stages = [s.name for s in analysis.stages]
    if not failures and (analysis.log_excerpt or analysis.analysis_text):
        excerpt = (analysis.log_excerpt + "\n" + analysis.analysis_text).encode("utf-8", "replace")
        result = read_console([excerpt], stage=stage)
        failures, notes = (
            result.failures,
            ["no failures[] given: read log_excerpt and analysis_text"],
        )
        stages += [s for s in result.stages if s not in stages]
    return FailureReport(kind, failures, stages, analysis=analysis, notes=notes)


def _decode_json(body: bytes) -> Any:
    text = body.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise IntakeError(
            f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc
    except RecursionError as exc:
        raise IntakeError("JSON nested too deeply to be a CI report") from exc


def _read_capped(stream: BinaryIO, limit: int) -> bytes:
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise IntakeError(
            f"document larger than {MAX_DOCUMENT_BYTES >> 20} MiB; send console logs as text"
        )
    return data


def _stages(stage: str | None) -> list[str]:
    return [stage] if stage else []
