"""The line prefixes CI systems put before every line of a job log, recognised and removed.

Each CI decorates its log lines differently; pytest's ``FAILED ...`` or a ``TypeError`` line is
only recognisable once that decoration is gone:

============================  =================================================================
GitHub Actions                ``2026-07-30T10:55:18.2470097Z `` then ``##[group]``, ``##[error]``...
                              (``gh run view --log`` adds ``job<TAB>step<TAB>`` before it)
Azure Pipelines               the same timestamps, ``##[section]Starting: ...``, ``##[command]``,
                              ``##vso[task.logissue type=error;...]`` logging commands
GitLab CI                     ``section_start:1690000000:step_script`` markers (with
                              ``\\r\\x1b[0K``), ANSI colours, optional stamps
                              ``2026-07-30T10:55:18.290545Z 00O ``
Travis CI                     ``travis_fold:start:install`` and ``travis_time:end:…`` markers
                              (with ``\\r\\x1b[0K``), ANSI colours, ``\\r`` progress lines
Buildkite                     ``\\x1b_bk;t=1690000000000\\x07`` escapes (an APC sequence); the
                              rendered ``[2026-07-30T10:55:18Z] `` stamp; ``~~~ ``/``--- ``/``+++ ``
                              section headers (detected, nothing to remove)
CircleCI                      nothing before its lines; detected by ``#!/bin/bash -eo pipefail``
                              and ``Exited with code exit status 1``
Jenkins                       Timestamper ``[2026-11-29T14:49:57.123Z] ``, ``14:49:57 ``, elapsed
                              ``00:01:02.345 ``; parallel branches ``[H100_PCIe-PyTorch-1] ``
TeamCity                      ``##teamcity[...]`` service messages (read, not removed: see
                              ``teamcity``); a downloaded build log's ``[10:55:18]i: `` stamps
============================  =================================================================

Prefixes nest (a Jenkins timestamp before a branch name before a Timestamper clock) and logs mix
(a Jenkins job replaying a GitHub-style log), so every known prefix is stripped wherever it
appears at the start of a line, repeatedly, on the few lines the reader looks at. Which CI
wrote a log is detected separately, per log (``detect_dialects``), and reported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container
from dataclasses import dataclass
from enum import StrEnum

from fixers.intake.anchors import ByteData
from fixers.intake.stages import parse_stage


class Dialect(StrEnum):
    """The CI systems whose log format we recognise."""

    GITHUB_ACTIONS = "GitHub Actions"
    AZURE = "Azure Pipelines"
    GITLAB = "GitLab CI"
    TRAVIS = "Travis CI"
    BUILDKITE = "Buildkite"
    CIRCLECI = "CircleCI"
    JENKINS = "Jenkins"
    TEAMCITY = "TeamCity"


_ISO = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z"
_ISO_B = _ISO.encode()


def _marker(*, anywhere: bytes = b"", line_start: bytes = b"") -> Callable[[ByteData], bool]:
    """A test for text found anywhere in a sample, or at the start of one of its lines.

    ``^`` under ``re.MULTILINE`` is tried at every byte of the sample; a line start is found as
    the sample's start or after a literal newline, which ``re`` skips to with a fast scan.
    """
    searches = [re.compile(anywhere)] if anywhere else []
    first = re.compile(line_start) if line_start else None
    if line_start:
        searches.append(re.compile(b"\n(?:" + line_start + b")"))

    def found(head: ByteData) -> bool:
        if first is not None and first.match(head):
            return True
        return any(search.search(head) for search in searches)

    return found


_BRACKET_ISO_B = rb"\[\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z\] "
_DETECT: tuple[tuple[Dialect, Callable[[ByteData], bool]], ...] = (
    (Dialect.AZURE, _marker(anywhere=rb"##\[section\]|##vso\[")),
    (
        Dialect.GITLAB,
        _marker(anywhere=rb"section_(?:start|end):\d+:", line_start=_ISO_B + rb" [0-9a-f]{2}[OE]"),
    ),
    (Dialect.TRAVIS, _marker(anywhere=rb"travis_(?:fold|time):(?:start|end):")),
    (
        Dialect.GITHUB_ACTIONS,
        _marker(line_start=rb"(?:\xef\xbb\xbf)?" + _ISO_B + rb" (?![0-9a-f]{2}[OE]\+? )"),
    ),
    (Dialect.GITHUB_ACTIONS, _marker(anywhere=rb"##\[(?:group|endgroup|error|warning)\]")),
    (Dialect.BUILDKITE, _marker(anywhere=rb"\x1b_bk;t=\d+\x07")),
    # The agent's own `~~~ Preparing working directory`; `^^^ +++` re-opens a section.
    (
        Dialect.BUILDKITE,
        _marker(line_start=rb"(?:" + _BRACKET_ISO_B + rb")?(?:~~~ |\^\^\^ \+\+\+)"),
    ),
    (
        Dialect.CIRCLECI,
        _marker(
            anywhere=rb"Exited with code exit status \d+|CircleCI received exit code \d+",
            line_start=rb"#!/bin/(?:ba)?sh -eo pipefail",
        ),
    ),
    (
        Dialect.JENKINS,
        _marker(anywhere=rb"\[Pipeline\] ", line_start=rb"\[\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}"),
    ),
    (
        Dialect.TEAMCITY,
        _marker(anywhere=rb"##teamcity\[", line_start=rb"\[\d{2}:\d{2}:\d{2}\][ iWEF]:"),
    ),
)
_PIPELINE = re.compile(rb"\[Pipeline\] ")
_SAMPLE_BYTES = 8 << 10  # ~100 lines: every line of a CI log carries its prefix

# GitLab's section markers and Travis CI's fold and time markers carry their own `\r\x1b[0K`:
# removed before ANSI and `\r` are, or the marker would run into the text that follows it.
_MARKERS = re.compile(
    r"\x1b\[0K|section_(?:start|end):\d+:[A-Za-z0-9_.\-]+(?:\[[^\]\r\n]*\])?\r?"
    r"|travis_(?:fold|time):(?:start|end):[A-Za-z0-9_.\-:=,]*\r?"
)
_ANSI = re.compile(
    r"\x1b_[^\x07\x1b]*(?:\x07|\x1b\\)"  # APC, e.g. Buildkite's `_bk;t=...` timestamps
    r"|\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]"
)
_PREFIXES: tuple[re.Pattern[str], ...] = (
    re.compile("\ufeff"),
    # `gh run view --log`: job and step names, tab-separated, before the Actions timestamp.
    re.compile(r"[^\t\n]{1,200}\t[^\t\n]{1,200}\t(?=" + _ISO + ")"),
    # GitHub Actions / Azure, and GitLab's optional timestamps with their stream id (`00O+`).
    re.compile(_ISO + r"(?: [0-9a-f]{2}[OE]\+?)? ?"),
    # A TeamCity build log as downloaded: `[10:55:18]i: ` (status i/W/E), `[Step 1/2] `.
    re.compile(r"\[\d{2}:\d{2}:\d{2}\][ iWEF]:\s*(?:\[Step \d+/\d+\] )?"),
    # Jenkins Timestamper: `[ISO]`, `[2026-11-29 14:49:57]`, or a clock / elapsed time.
    re.compile(
        r"\[\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\] ?"
        r"|\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)? "
        r"|\[?\d{1,3}:\d{2}:\d{2}(?:[.,]\d+)?\]?(?: |$)"
    ),
)
_COMMAND = re.compile(
    r"##\[(?P<command>group|endgroup|error|warning|notice|debug|command|section)\]"
    # Azure's logging commands: `##vso[task.logissue type=error;sourcepath=...]message`.
    r"|##vso\[(?P<vso>[A-Za-z.]+)(?P<properties>[^\]\n]*)\]"
)
_VSO_ISSUE = re.compile(r"\btype=(?P<type>error|warning)\b")
_BRANCH = re.compile(r"\[(?P<branch>[A-Za-z0-9_.][A-Za-z0-9_.\- ]{0,99})\] ?")
_MAX_PASSES = 8


@dataclass(frozen=True)
class Stripped:
    """One line without its CI prefixes, and what they said."""

    text: str
    prefix: str
    branch: str | None
    command: str | None


def detect_dialects(sample: ByteData) -> list[Dialect]:
    """The CI systems whose markers appear in the first bytes of ``sample``, in table order."""
    head = sample[:_SAMPLE_BYTES]
    found: list[Dialect] = []
    for dialect, marker in _DETECT:
        if dialect not in found and marker(head):
            found.append(dialect)
    if Dialect.AZURE in found and Dialect.GITHUB_ACTIONS in found:
        found.remove(Dialect.GITHUB_ACTIONS)  # Azure writes the same timestamps and commands
    if Dialect.BUILDKITE in found and Dialect.JENKINS in found and not _PIPELINE.search(head):
        found.remove(Dialect.JENKINS)  # Buildkite's rendered `[ISO] ` stamp, no `[Pipeline]`
    return found


def strip_escapes(text: str) -> str:
    """Remove GitLab and Travis CI markers, ANSI/APC escape sequences and carriage returns.

    A line that a carriage return rewrote (a progress bar, then the line printed over it) is
    what a terminal shows last: its last segment that holds more than escape sequences.
    """
    if not any(mark in text for mark in ("\x1b", "\r", "section_", "travis_")):
        return text
    text = _ANSI.sub("", _MARKERS.sub("", text))
    if "\r" in text:
        segments = [segment for segment in text.split("\r") if segment.strip()]
        text = segments[-1] if segments else ""
    return text


def strip_prefixes(text: str, branches: Container[str] = ()) -> Stripped:
    """Remove every CI prefix at the start of an escape-free line, nested ones included.

    A ``[name] `` prefix counts as a Jenkins parallel branch when ``name`` is a stage name
    (``H100_PCIe-PyTorch-1``) or one of ``branches`` (learned from ``(Branch: name)`` lines).
    """
    start = text
    branch: str | None = None
    command: str | None = None
    for _ in range(_MAX_PASSES):
        before = text
        for pattern in _PREFIXES:
            match = pattern.match(text)
            if match and match.end():
                text = text[match.end() :]
        if found := _COMMAND.match(text):
            command = command or _command_name(found)
            text = text[found.end() :]
        if branch is None and (found := _BRANCH.match(text)):
            name = found["branch"]
            if name in branches or parse_stage(name) is not None:
                branch = name
                text = text[found.end() :]
        if text == before:
            break
    return Stripped(text, start[: len(start) - len(text)], branch, command)


def _command_name(found: re.Match[str]) -> str:
    """``error`` for ``##[error]`` and an Azure ``task.logissue type=error``, and so on."""
    if found["command"]:
        return found["command"]
    if found["vso"] == "task.logissue" and (issue := _VSO_ISSUE.search(found["properties"])):
        return issue["type"]
    return "vso"
