"""Raw console text (any CI, any test runner) → failures, streamed in chunks with bounded memory.

Only lines holding an anchor literal are looked at one by one (see ``anchors``). Between anchors
the reader copies bytes wholesale into the open capture: a pytest report section (head and tail
kept), a unittest or trial failure block, or a free-standing CPython traceback (head kept).
Section titles are matched to the short test summary when a pytest session ends, and take their
file from the traceback's first frame in the repository's tests otherwise, so each failure
carries its pytest node id; unittest-style, trial and TeamCity reports are read into node ids
too (``unittest_log``, ``teamcity``, ``testids``). A log with no failed test says what failed
the job instead (``log_errors``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import BinaryIO

from fixers.classify.failures import Failure
from fixers.intake import log_errors, pytest_log
from fixers.intake.anchors import ByteData, anchor_lines, has_signature_anchor, reader_scanner
from fixers.intake.blocks import BLOCK_BYTES, line_blocks
from fixers.intake.capture import Capture
from fixers.intake.lines import CleanLine, clean_block, clean_line
from fixers.intake.prefixes import Dialect, detect_dialects
from fixers.intake.pytest_log import PytestReport, Section
from fixers.intake.stages import gpu_type_of
from fixers.intake.teamcity import not_yet_reported, parse_message, test_failure
from fixers.intake.testids import clean_test_id
from fixers.intake.tracebacks import last_exception_line, trim_traceback
from fixers.intake.unittest_log import BARE_RULE, RAN_LINE, block_failures, runner_of

CHUNK_BYTES = BLOCK_BYTES
MAX_FAILURES = 100_000
_ERROR_COMMANDS_KEPT = 50

# `[Pipeline] { (Build)` opens a stage; `[Pipeline] { (Branch: A10-PyTorch-1)` a parallel branch.
_PIPELINE_STAGE = re.compile(
    r"^\[Pipeline\] (?:\[[^\]]+\] )?\{ \((?P<branch>Branch: )?(?P<stage>[^)]+)\)"
)


@dataclass
class ConsoleResult:
    """Failures found in a console log, the stages it ran, and anything worth telling the user."""

    failures: list[Failure] = field(default_factory=list)
    stages: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dialects: list[Dialect] = field(default_factory=list)
    runners: list[str] = field(default_factory=list)


class ConsoleReader:
    """A line-anchored state machine over a console log; feed it chunks, then ``finish()``."""

    def __init__(self, *, stage: str | None = None) -> None:
        self.result = ConsoleResult()
        self._stage = stage
        self._pytest = PytestReport()
        self._section: Section | None = None
        self._free: Capture | None = None
        self._free_stage: str | None = None
        self._free_line = ""
        self._replaced = 0
        self._branches: set[str] = set()
        self._tail = b""
        self._error_commands: list[CleanLine] = []
        self._consumed = 0  # bytes fed before the current chunk
        self._limit = 0  # where the current chunk's data ends
        self._after_rule = False  # the last chunk ended with a bare `=` rule
        self._headers_after = False  # the last chunk ended with pytest's session header rule
        self._line_report: Capture | None = None
        self._teamcity: list[tuple[str, Failure]] = []
        self._no_tests: tuple[str, str] | None = None
        if stage:
            self.result.stages.append(stage)

    # -- feeding ---------------------------------------------------------------------------
    def feed(self, chunk: bytes | bytearray, end: int | None = None) -> None:
        """Consume ``chunk[:end]``, which ends at a line boundary (or at end of input)."""
        end = len(chunk) if end is None else end
        view = memoryview(chunk)[:end]
        self._detect(view)
        kept = log_errors.TAIL_BYTES
        self._tail = (self._tail + chunk[max(0, end - kept) : end])[-kept:]
        position = 0
        self._limit = end
        if self._after_rule:
            self._after_rule = False
            self._runner_block(chunk, 0, end)
        if self._headers_after:
            self._headers_after = False
            self._session_header(chunk, 0, end)
        for start, stop in anchor_lines(chunk, end, reader_scanner()(view)):
            self._copy(view[position:start])
            self._line(chunk, start, stop)
            position = stop
        self._copy(view[position:])
        self._consumed += end

    def finish(self) -> ConsoleResult:
        """Close open captures, match sections to the summary, and return the result."""
        self._close_free()
        self._close_section()
        self._end_session()
        for failure in not_yet_reported(self._teamcity, self.result.failures):
            self._add(failure)
        self._never_nothing()
        if self.result.dialects:
            names = ", ".join(self.result.dialects)
            self.result.notes.append(f"log format: {names} (line prefixes removed before matching)")
        if self.result.runners:
            names = ", ".join(self.result.runners)
            self.result.notes.append(f"test reports read: {names}")
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
        """No failure found: what failed the job becomes the failure, or the note says none."""
        if self.result.failures:
            return
        whole = self._consumed <= log_errors.TAIL_BYTES
        tail = log_errors.tail_lines(self._decode(self._tail), self._branches, whole=whole)
        found = log_errors.job_failures(
            self._error_commands + tail, self._no_tests, self._stage, gpu_type_of(self._stage)
        )
        for failure in found:
            self._add(failure)
        note = log_errors.JOB_FAILURE_NOTE if found else log_errors.NO_FAILURE_NOTE
        self.result.notes.append(note)

    def _runner(self, name: str) -> None:
        if name not in self.result.runners:
            self.result.runners.append(name)

    def _copy(self, data: ByteData) -> None:
        if self._section is not None:
            self._section.capture.add(data)
        elif self._free is not None:
            self._free.add(data)
        elif self._line_report is not None:
            self._line_report.add(data)

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
        elif rule := pytest_log.RULE.match(text):
            self._rule(rule["title"], log_line)
            if "test session starts" in rule["title"]:
                self._session_header(chunk, end, self._limit)
        elif BARE_RULE.match(text):
            self._close_runner_block()
            if not (self._section and self._section.runner == "pytest"):
                self._runner_block(chunk, end, self._limit)
        elif pytest_log.JUNIT_NOTICE.match(text):
            self._close_section()
        elif (section := pytest_log.section_title(text)) and self._pytest.in_report:
            self._close_section()
            self._close_free()
            self._line_report = None  # sections: not a `--tb=line` report
            self._section = Section(section, stage, Capture(keep_tail=True), log_line)
        elif RAN_LINE.match(text):
            self._close_runner_block()
        elif summary := (pytest_log.SUMMARY.match(text) or pytest_log.VERBOSE.match(text)):
            message = summary.groupdict().get("message")
            if self._pytest.summary_line(summary["id"], message, stage, log_line):
                self._close_free()
        elif text.startswith("Traceback (most recent call last):") and self._section is None:
            self._free_traceback(stage, log_line)
        elif "##teamcity[" in text:
            self._teamcity_message(text, stage, log_line)
        elif self._section is None and self._free is None and has_signature_anchor(text):
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

    def _rule(self, title: str, log_line: str) -> None:
        self._close_section()
        self._close_free()
        self._close_line_report()
        lowered = title.lower()
        if lowered in ("failures", "errors"):
            self._pytest.in_report = True
            self._line_report = Capture(keep_tail=False)
            self._runner("pytest")
        elif pytest_log.SESSION_END.search(title):
            if nothing := log_errors.no_tests_ran(title):
                self._no_tests = (nothing, log_line)
            self._end_session()
        elif any(word in lowered for word in pytest_log.REPORT_ENDS):
            self._pytest.in_report = False

    def _next_line(self, chunk: bytes | bytearray, start: int, limit: int) -> tuple[str, str]:
        """The line of ``chunk`` that starts at ``start`` (before ``limit``): cleaned, and as
        printed."""
        stop = chunk.find(b"\n", start, limit)
        printed = self._decode(chunk[start : limit if stop == -1 else stop])
        return clean_line(printed, self._branches).text, printed.strip("\r\n\ufeff")

    def _runner_block(self, chunk: bytes | bytearray, start: int, limit: int) -> None:
        """After a bare ``=`` rule: a unittest-style ``FAIL: ...`` or trial ``[FAIL]`` header
        opens a failure block (read when it closes). The header is read here, not scanned for."""
        if start >= limit:
            self._after_rule = True  # the header is the next chunk's first line
            return
        text, printed = self._next_line(chunk, start, limit)
        runner = runner_of(text)
        if runner is None:
            return
        self._close_section()
        self._close_free()
        stage = self._stage
        capture = Capture(keep_tail=runner == "trial")  # trial names its tests last
        self._section = Section(text, stage, capture, printed, runner)

    def _session_header(self, chunk: bytes | bytearray, start: int, limit: int) -> None:
        """pytest's header after ``test session starts``: its ``rootdir:``, what the paths it
        prints are relative to (read here, within a few lines, not scanned for)."""
        for _ in range(8):
            if start >= limit:
                self._headers_after = True
                return
            text, _ = self._next_line(chunk, start, limit)
            if root := pytest_log.ROOTDIR.match(text):
                self._pytest.rootdir = root["root"].rstrip("/")
                return
            newline = chunk.find(b"\n", start, limit)
            if newline == -1:
                return
            start = newline + 1

    def _teamcity_message(self, text: str, stage: str | None, log_line: str) -> None:
        message = parse_message(text)
        if message is None:
            return
        values = message.attributes
        if message.name == "buildProblem" and values.get("description"):
            problem = CleanLine(values["description"], None, "", "error")
            if len(self._error_commands) < _ERROR_COMMANDS_KEPT:
                self._error_commands.append(problem)
        elif message.name == "testFailed" and values.get("name"):
            self._runner("TeamCity")
            failure = test_failure(message, stage, log_line, self._pytest.rootdir)
            self._teamcity.append((values["name"], failure))

    def _free_traceback(self, stage: str | None, log_line: str) -> None:
        if self._free is not None and self._free.ends_with_chain_boundary():
            return  # the next exception of the same chained traceback
        self._close_free()
        self._free = Capture(keep_tail=False)
        self._free_stage, self._free_line = stage, log_line

    # -- closing captures --------------------------------------------------------------------
    def _close_section(self) -> None:
        if self._section is None:
            return
        section, self._section = self._section, None
        if section.runner == "pytest":
            self._pytest.sections.append(section)
            return
        text = clean_block(self._decode(section.capture.bytes()), self._branches)
        self._runner(section.runner)
        for found in block_failures(section.runner, text, self._pytest.rootdir):
            self._add(
                Failure(
                    found.test_id,
                    found.error,
                    stack_trace=found.trace,
                    stage=section.stage,
                    gpu_type=gpu_type_of(section.stage),
                    log_line=section.log_line,
                )
            )

    def _close_runner_block(self) -> None:
        if self._section is not None and self._section.runner != "pytest":
            self._close_section()

    def _close_line_report(self) -> None:
        if self._line_report is not None:
            text = clean_block(self._decode(self._line_report.bytes()), self._branches)
            self._line_report = None
            self._pytest.line_report(text, self._stage)

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
        self._close_line_report()
        sections = self._pytest.sections
        texts = [clean_block(self._decode(s.capture.bytes()), self._branches) for s in sections]
        for failure in self._pytest.end(texts):
            self._add(failure)

    def _add(self, failure: Failure) -> None:
        if failure.test_id is not None and failure.test_id != clean_test_id(failure.test_id):
            failure = replace(failure, test_id=clean_test_id(failure.test_id))
        if len(self.result.failures) < MAX_FAILURES:
            self.result.failures.append(failure)
        elif len(self.result.failures) == MAX_FAILURES:
            self.result.notes.append(
                f"more than {MAX_FAILURES} failures: the rest were counted only"
            )

    def _remember_stage(self, stage: str) -> None:
        if stage not in self.result.stages:
            self.result.stages.append(stage)


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
