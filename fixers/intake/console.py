"""Raw console text (Jenkins + pytest) → failures, streamed in chunks with bounded memory.

Only lines holding an anchor literal are looked at one by one (see ``anchors``). Between anchors
the reader copies bytes wholesale into the open capture: a pytest report section (head and tail
kept) or a free-standing CPython traceback (head kept). Section titles are matched to the short
test summary when a pytest session ends, so each failure carries its pytest node id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import BinaryIO

from fixers.classify.failures import Failure
from fixers.classify.signatures import builtin_signatures
from fixers.intake.anchors import ByteData, Scanner, build_scanner
from fixers.intake.blocks import BLOCK_BYTES, line_blocks
from fixers.intake.capture import Capture
from fixers.intake.lines import CleanLine, clean_block, clean_line
from fixers.intake.log_errors import NO_FAILURE_NOTE, TAIL_BYTES, log_failure, tail_lines
from fixers.intake.prefixes import Dialect, detect_dialects
from fixers.intake.stages import gpu_type_of
from fixers.intake.tracebacks import last_exception_line, pytest_error_text, trim_traceback

CHUNK_BYTES = BLOCK_BYTES
MAX_FAILURES = 100_000
_STRUCTURE_ANCHORS = (
    b"_____ ",
    b"=====",
    b"!!!!!",
    b"FAILED",
    b"ERROR ",
    b"[Pipeline] { (",
    b"Traceback (most recent call last):",
    b" generated xml file: ",
    b"##[error]",
)
_ERROR_COMMANDS_KEPT = 50

# `[Pipeline] { (Build)` opens a stage; `[Pipeline] { (Branch: A10-PyTorch-1)` a parallel branch.
_PIPELINE_STAGE = re.compile(
    r"^\[Pipeline\] (?:\[[^\]]+\] )?\{ \((?P<branch>Branch: )?(?P<stage>[^)]+)\)"
)
_RULE = re.compile(r"^(?P<fill>[=!])(?P=fill){2,} (?P<title>.+?) (?P=fill){3,}$")
_SESSION_END = re.compile(
    r"\b(?:failed|passed|errors?|skipped|xfailed|no tests ran)\b.* in [\d.]+s"
)
_JUNIT_NOTICE = re.compile(r"^-+ generated xml file: .* -+$")
_SECTION = re.compile(r"^_{3,} (?P<title>.+?) _{3,}$")
_SUMMARY = re.compile(r"^(?P<kind>FAILED|ERROR) (?P<id>\S+)(?: - (?P<message>.*))?$")
_VERBOSE = re.compile(r"^(?P<id>\S+?\.py(?:::\S+)?) (?P<kind>FAILED|ERROR)\b")
_PHASE_PREFIX = re.compile(r"^ERROR at (?:setup|teardown) of ")
_LOCATION = re.compile(r"^(?P<path>[^\s:]+\.py):\d+: \w[\w.]*$")


def _scanner() -> Scanner:
    return _scanner_for(tuple(s.anchor.encode() for s in builtin_signatures()))


@cache
def _scanner_for(signature_anchors: tuple[bytes, ...]) -> Scanner:
    # Keyed by the anchors: a codemod added at run time (its own signatures) gets a new scanner.
    return build_scanner(_STRUCTURE_ANCHORS + signature_anchors)


@dataclass
class _Section:
    title: str
    stage: str | None
    capture: Capture
    log_line: str = ""

    @property
    def collection_path(self) -> str | None:
        prefix = "ERROR collecting "
        return self.title[len(prefix) :].strip() if self.title.startswith(prefix) else None


@dataclass
class ConsoleResult:
    """Failures found in a console log, the stages it ran, and anything worth telling the user."""

    failures: list[Failure] = field(default_factory=list)
    stages: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dialects: list[Dialect] = field(default_factory=list)


class ConsoleReader:
    """A line-anchored state machine over a console log; feed it chunks, then ``finish()``."""

    def __init__(self, *, stage: str | None = None) -> None:
        self.result = ConsoleResult()
        self._stage = stage
        self._in_report = False
        self._section: _Section | None = None
        self._sections: list[_Section] = []
        self._summary: dict[str, tuple[str | None, str | None, str]] = {}
        self._free: Capture | None = None
        self._free_stage: str | None = None
        self._free_line = ""
        self._replaced = 0
        self._branches: set[str] = set()
        self._tail = b""
        self._error_commands: list[CleanLine] = []
        if stage:
            self.result.stages.append(stage)

    # -- feeding ---------------------------------------------------------------------------
    def feed(self, chunk: bytes | bytearray, end: int | None = None) -> None:
        """Consume ``chunk[:end]``, which ends at a line boundary (or at end of input)."""
        end = len(chunk) if end is None else end
        view = memoryview(chunk)[:end]
        self._detect(view)
        self._tail = (self._tail + chunk[max(0, end - TAIL_BYTES) : end])[-TAIL_BYTES:]
        position = 0
        for start, stop in _anchor_lines(chunk, end, _scanner()(view)):
            self._copy(view[position:start])
            self._line(chunk, start, stop)
            position = stop
        self._copy(view[position:])

    def finish(self) -> ConsoleResult:
        """Close open captures, match sections to the summary, and return the result."""
        self._close_free()
        self._close_section()
        self._end_session()
        self._never_nothing()
        if self.result.dialects:
            names = ", ".join(self.result.dialects)
            self.result.notes.append(f"log format: {names} (line prefixes removed before matching)")
        if self._replaced:
            self.result.notes.append(
                f"invalid UTF-8: {self._replaced} undecodable byte sequence(s) shown as U+FFFD"
            )
        return self.result

    def _detect(self, chunk: memoryview) -> None:
        """Which CI wrote the log: sampled at the head of every chunk (logs may be mixed)."""
        for dialect in detect_dialects(chunk):
            if dialect not in self.result.dialects:
                self.result.dialects.append(dialect)

    def _never_nothing(self) -> None:
        """No failure found: the last error-looking lines become one, or the note says none."""
        if self.result.failures:
            return
        lines = self._error_commands + tail_lines(self._decode(self._tail), self._branches)
        failure = log_failure(lines, self._stage, gpu_type_of(self._stage))
        if failure is None:
            self.result.notes.append(NO_FAILURE_NOTE)
            return
        self._add(failure)
        self.result.notes.append(
            "no failed test or traceback found: the last error lines of the log are kept "
            "as one failure"
        )

    def _copy(self, data: ByteData) -> None:
        if self._section is not None:
            self._section.capture.add(data)
        elif self._free is not None:
            self._free.add(data)

    def _decode(self, data: bytes | bytearray) -> str:
        text = data.decode("utf-8", errors="replace")
        if "\ufffd" in text:
            self._replaced += text.count("\ufffd")
        return text

    # -- one anchored line -----------------------------------------------------------------
    def _line(self, chunk: bytes | bytearray, start: int, end: int) -> None:
        raw = chunk[start:end]
        printed = self._decode(raw)
        cleaned = clean_line(printed, self._branches)
        text = cleaned.text
        log_line = printed.strip("\r\n\ufeff")
        stage = cleaned.branch_stage or self._stage
        if cleaned.branch_stage:
            self._remember_stage(cleaned.branch_stage)

        if cleaned.command == "error" and len(self._error_commands) < _ERROR_COMMANDS_KEPT:
            self._error_commands.append(cleaned)
        if stage_match := _PIPELINE_STAGE.match(text):
            if stage_match["branch"]:
                self._branches.add(stage_match["stage"].strip())
            self._stage = stage_match["stage"].strip()
            self._remember_stage(self._stage)
        elif rule := _RULE.match(text):
            self._rule(rule["title"])
        elif _JUNIT_NOTICE.match(text):
            self._close_section()
        elif (section := _SECTION.match(text)) and self._in_report:
            self._close_section()
            self._close_free()
            self._section = _Section(section["title"], stage, Capture(keep_tail=True), log_line)
        elif summary := (_SUMMARY.match(text) or _VERBOSE.match(text)):
            self._summary_line(summary["id"], summary.groupdict().get("message"), stage, log_line)
        elif text.startswith("Traceback (most recent call last):") and self._section is None:
            self._free_traceback(stage, log_line)
        elif self._section is None and self._free is None and _has_signature_anchor(text):
            before = chunk[max(0, start - 2048) : start]
            self._add(
                Failure(
                    None,
                    text,
                    log_excerpt=clean_block(self._decode(before), self._branches) + "\n" + text,
                    stage=stage,
                    gpu_type=gpu_type_of(stage),
                    log_line=log_line,
                )
            )
        self._copy(raw)

    def _rule(self, title: str) -> None:
        self._close_section()
        self._close_free()
        lowered = title.lower()
        if lowered in ("failures", "errors"):
            self._in_report = True
        elif _SESSION_END.search(title):
            self._end_session()
        elif "short test summary" in lowered:
            self._in_report = False

    def _summary_line(
        self, test_id: str, message: str | None, stage: str | None, log_line: str
    ) -> None:
        if not (".py" in test_id or "::" in test_id):
            return
        self._close_free()
        previous = self._summary.get(test_id)
        if previous is None or (message and not previous[0]):
            self._summary[test_id] = (message, stage, log_line)

    def _free_traceback(self, stage: str | None, log_line: str) -> None:
        if self._free is not None and self._free.ends_with_chain_boundary():
            return  # the next exception of the same chained traceback
        self._close_free()
        self._free = Capture(keep_tail=False)
        self._free_stage, self._free_line = stage, log_line

    # -- closing captures --------------------------------------------------------------------
    def _close_section(self) -> None:
        if self._section is not None:
            self._sections.append(self._section)
            self._section = None

    def _close_free(self) -> None:
        if self._free is None:
            return
        text = trim_traceback(clean_block(self._decode(self._free.bytes()), self._branches))
        stage, self._free, self._free_stage = self._free_stage, None, None
        exception = last_exception_line(text)
        if exception is not None:
            self._add(
                Failure(
                    None,
                    str(exception),
                    stack_trace=text,
                    stage=stage,
                    gpu_type=gpu_type_of(stage),
                    log_line=self._free_line,
                )
            )

    def _end_session(self) -> None:
        """Pair each report section with its summary entry; unpaired entries stand alone."""
        self._close_section()
        remaining = dict(self._summary)
        for section in self._sections:
            text = clean_block(self._decode(section.capture.bytes()), self._branches)
            test_id = _section_test_id(section, text, remaining)
            message, summary_stage, _ = remaining.pop(test_id, (None, None, ""))
            stage = section.stage or summary_stage
            error = pytest_error_text(text) or message or ""
            self._add(
                Failure(
                    test_id,
                    error,
                    stack_trace=text,
                    stage=stage,
                    gpu_type=gpu_type_of(stage),
                    log_line=section.log_line,
                )
            )
        for test_id, (message, stage, log_line) in remaining.items():
            self._add(
                Failure(
                    test_id,
                    message or "",
                    stage=stage,
                    gpu_type=gpu_type_of(stage),
                    log_line=log_line,
                )
            )
        self._sections.clear()
        self._summary.clear()
        self._in_report = False

    def _add(self, failure: Failure) -> None:
        if len(self.result.failures) < MAX_FAILURES:
            self.result.failures.append(failure)
        elif len(self.result.failures) == MAX_FAILURES:
            self.result.notes.append(
                f"more than {MAX_FAILURES} failures: the rest were counted only"
            )

    def _remember_stage(self, stage: str) -> None:
        if stage not in self.result.stages:
            self.result.stages.append(stage)


def _has_signature_anchor(text: str) -> bool:
    return any(signature.anchor in text for signature in builtin_signatures())


def _anchor_lines(
    chunk: bytes | bytearray, end: int, offsets: list[int]
) -> Iterator[tuple[int, int]]:
    """The distinct lines (start, end-after-newline) of ``chunk[:end]`` holding the anchors."""
    last_end = -1
    for offset in sorted(offsets):
        if offset < last_end:
            continue
        start = chunk.rfind(b"\n", 0, offset) + 1
        newline = chunk.find(b"\n", offset, end)
        last_end = end if newline == -1 else newline + 1
        yield start, last_end


def _section_test_id(
    section: _Section, text: str, summary: dict[str, tuple[str | None, str | None, str]]
) -> str:
    """The pytest node id of a report section, from the summary or the section's last location."""
    if section.collection_path:
        return section.collection_path
    title = _PHASE_PREFIX.sub("", section.title)
    for test_id in summary:
        _, _, tail = test_id.partition("::")
        if tail and tail.replace("::", ".") == title:
            return test_id
    for line in reversed(text.splitlines()):
        if location := _LOCATION.match(line.strip()):
            return f"{location['path']}::{_title_to_node(title)}"
    return title


def _title_to_node(title: str) -> str:
    name, bracket, params = title.partition("[")
    return name.replace(".", "::") + bracket + params


def read_console(blocks: Iterable[bytes], *, stage: str | None = None) -> ConsoleResult:
    """Read a console log given as successive byte blocks, re-cut at line boundaries."""
    reader = ConsoleReader(stage=stage)
    carry = b""
    for block in blocks:
        data = carry + block
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) < CHUNK_BYTES:
            carry = data
            continue
        if cut == 0:
            cut = len(data)  # one enormous line: take it in pieces
        reader.feed(data[:cut])
        carry = data[cut:]
    if carry:
        reader.feed(carry)
    return reader.finish()


def read_console_stream(
    stream: BinaryIO, head: bytes = b"", *, stage: str | None = None
) -> ConsoleResult:
    """Read ``head`` then the rest of a binary stream as a console log, in one reused buffer.

    Raises ``IntakeError`` at a NUL byte (binary input), as soon as the block holding it is read.
    """
    reader = ConsoleReader(stage=stage)
    for buffer, end in line_blocks(stream, head, size=CHUNK_BYTES):
        reader.feed(buffer, end)
    return reader.finish()
