"""pytest's terminal report, read line by line: its rules, sections, summary and node ids.

pytest 3.x to 8.x print a failure report as ``=== FAILURES ===`` (and ``=== ERRORS ===``), one
section per failed test under a ``___ title ___`` rule (a title too long for the terminal gets a
rule of one ``_`` either side), then, with ``-r`` (the default ``-rfE`` since pytest 6), a short
summary ``FAILED path::name[params] - message``. ``--tb=line`` prints one ``path:line: message``
per failure instead of sections, ``--tb=no`` nothing. A session's sections are matched to its
summary when it ends; a section the summary does not name takes its file from the first
traceback frame in the repository's tests (``testids.own_test_file``), never a library's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fixers.classify.failures import Failure
from fixers.intake.capture import Capture
from fixers.intake.stages import gpu_type_of
from fixers.intake.testids import is_test_path, own_test_file, repo_relative
from fixers.intake.tracebacks import is_repository_path, pytest_error_text

RULE = re.compile(r"^(?P<fill>[=!])(?P=fill){2,} (?P<title>.+?) (?P=fill){3,}$")
SESSION_END = re.compile(
    r"\b(?:failed|passed|errors?|skipped|xfailed|xpassed|deselected|warnings?|no tests ran)\b"
    r".* in [\d.]+ ?s"
)
# Rules after which pytest's report holds no more failure sections.
REPORT_ENDS = ("summary", "passes", "durations", "coverage", "statistics", "session starts")
JUNIT_NOTICE = re.compile(r"^-+ generated xml file: .* -+$")
_SECTION = re.compile(r"^(?P<fill>_+) (?P<title>.+?) _+$")
# A test's title: `test_x`, `TestC.test_x[any params]`, `ERROR at setup of ...`, a doctest.
_TEST_TITLE = re.compile(
    r"^(?:ERROR at (?:setup|teardown) of |ERROR collecting |\[doctest\] )?[^\s\[]+(?:\[.*\])?$"
)
# `FAILED path::name[params, spaces allowed] - message`; the id ends where ` - ` follows.
_NODE = r"(?P<id>[^\s\[]+?(?:\[.*?\](?= - |$))?)"
SUMMARY = re.compile(r"^(?P<kind>FAILED|ERROR) " + _NODE + r"(?: - (?P<message>.*))?$")
VERBOSE = re.compile(r"^(?P<id>\S+?\.py(?:::[^\s\[]+)?(?:\[.*?\])?) (?P<kind>FAILED|ERROR)\b")
ROOTDIR = re.compile(r"^rootdir: (?P<root>[^,\s]+)")
_PHASE_PREFIX = re.compile(r"^ERROR at (?:setup|teardown) of ")
# `--tb=line`: one `path:line: message` per failure, no sections.
_CRASH_LINE = re.compile(r"^(?P<path>\S+?\.py):\d+: (?P<message>.+)$")
# pytest's `fixture 'x' not found` report names the test's file this way.
_FIXTURE_FILE = re.compile(r"^\s*file (?P<path>\S.*?\.py), line \d+$")

SummaryEntry = tuple[str | None, str | None, str]  # message, stage, the line as printed


@dataclass
class Section:
    """A captured failure report: a pytest section, or a unittest or trial failure block."""

    title: str
    stage: str | None
    capture: Capture
    log_line: str = ""
    runner: str = "pytest"  # or "unittest" (unittest, nose, nose2, Django), "trial"

    @property
    def collection_path(self) -> str | None:
        """The module of an ``ERROR collecting path`` section."""
        prefix = "ERROR collecting "
        return self.title[len(prefix) :].strip() if self.title.startswith(prefix) else None


def section_title(line: str) -> str | None:
    """The title of a pytest section rule: 3+ ``_`` around any title (as always read), 1-4
    around a title that looks like a test's (pytest shortens the rule around a long title)."""
    section = _SECTION.match(line)
    if section is None:
        return None
    if len(section["fill"]) >= 3 or _TEST_TITLE.match(section["title"]):
        return section["title"]
    return None


@dataclass
class PytestReport:
    """What one pytest session has reported so far, until its last line ends it."""

    in_report: bool = False
    sections: list[Section] = field(default_factory=list)
    summary: dict[str, SummaryEntry] = field(default_factory=dict)
    crash_lines: list[tuple[str, str, str | None, str]] = field(default_factory=list)
    rootdir: str | None = None

    def summary_line(
        self, test_id: str, message: str | None, stage: str | None, log_line: str
    ) -> bool:
        """Record ``FAILED id - message``; False when ``id`` names no test (no file)."""
        if not (".py" in test_id or "::" in test_id):
            return False
        previous = self.summary.get(test_id)
        if previous is None or (message and not previous[0]):
            self.summary[test_id] = (message, stage, log_line)
        return True

    def line_report(self, text: str, stage: str | None) -> None:
        """Keep a ``--tb=line`` report's ``path:line: message`` lines for the session's end."""
        for line in text.splitlines():
            if crash := _CRASH_LINE.match(line.strip()):
                self.crash_lines.append((crash["path"], crash["message"], stage, line.strip()))

    def end(self, texts: list[str]) -> list[Failure]:
        """The session's failures (``texts``: each section's cleaned text), and a fresh start."""
        failures: list[Failure] = []
        remaining = dict(self.summary)
        for section, text in zip(self.sections, texts, strict=True):
            test_id = section_test_id(section, text, remaining, self.rootdir)
            message, summary_stage, _ = remaining.pop(test_id or "", (None, None, ""))
            stage = section.stage or summary_stage
            error = pytest_error_text(text) or message or ""
            if test_id is None and not error:
                continue  # a `___ title ___` line that opened no test's report
            failures.append(
                Failure(test_id, error, text, stage, gpu_type_of(stage), log_line=section.log_line)
            )
        for test_id, (message, stage, log_line) in remaining.items():
            failures.append(
                Failure(test_id, message or "", "", stage, gpu_type_of(stage), log_line=log_line)
            )
        if not self.summary and not self.sections:
            failures += self._crash_failures()
        self.sections, self.summary, self.crash_lines = [], {}, []
        self.in_report = False
        return failures

    def _crash_failures(self) -> list[Failure]:
        """``--tb=line`` with no summary: each line is a failure of its test module when the
        crash was in one (the test's name is not printed)."""
        failures = []
        for path, message, stage, line in self.crash_lines:
            relative = repo_relative(path, self.rootdir)
            inside = is_repository_path(path) and not relative.startswith("/")
            test_id = relative if inside and is_test_path(relative) else None
            failures.append(Failure(test_id, message, line, stage, gpu_type_of(stage), "", line))
        return failures


def section_test_id(
    section: Section, text: str, summary: dict[str, SummaryEntry], rootdir: str | None
) -> str | None:
    """The pytest node id of a report section: the summary's entry for its title (the one in
    the section's file when several tests share the title), else the section's file and title.

    The file is the first traceback frame in the repository's tests (``testids.own_test_file``),
    never a library's file; without one the section names no test id.
    """
    if section.collection_path:
        return section.collection_path
    title = _PHASE_PREFIX.sub("", section.title)
    doctest = title.startswith("[doctest] ")
    node = title.removeprefix("[doctest] ") if doctest else _title_to_node(title)
    file = _fixture_file(text, rootdir) or own_test_file(text, rootdir)
    matches = [test_id for test_id in summary if test_id.partition("::")[2] == node]
    if matches:
        return next((m for m in matches if m.partition("::")[0] == file), matches[0])
    return f"{file}::{node}" if file else None


def _title_to_node(title: str) -> str:
    name, bracket, params = title.partition("[")
    return name.replace(".", "::") + bracket + params


def _fixture_file(text: str, rootdir: str | None) -> str | None:
    for line in text.splitlines()[:20]:
        if found := _FIXTURE_FILE.match(line):
            return repo_relative(found["path"], rootdir)
    return None
