"""Finding the few interesting lines of a huge log at memory-bandwidth speed.

Most of a CI console log is noise. Only lines holding one of a handful of literal anchors can
start, end or name a failure, so the console reader scans raw byte chunks for those anchors and
runs Python only on the lines they sit in. Hyperscan does the multi-literal scan when it is
installed (it is on x86-64 Linux); otherwise one alternation regex of the standard library does
the same job more slowly.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from typing import Any

from fixers.classify.signatures import builtin_signatures

_hyperscan: Any
try:  # which branch runs depends on the platform
    import hyperscan as _hyperscan
except ImportError:
    _hyperscan = None

ByteData = bytes | bytearray | memoryview  # a block, or a view of the reader's buffer
Scanner = Callable[[ByteData], list[int]]

# What the console reader scans for, besides every scanned signature's anchor: the lines that
# start, end or name a failure in pytest's, unittest's, trial's and TeamCity's reports.
READER_ANCHORS = (
    b"_____ ",
    b"=====",
    b"!!!!!",
    b"FAILED",
    b"ERROR ",
    b"[Pipeline] { (",
    b"Traceback (most recent call last):",
    b" generated xml file: ",
    b"##[error]",
    # unittest's and trial's failure headers (`FAIL: ...`, `[FAIL]`) and pytest's `rootdir:`
    # are read as the lines after a rule `=====` finds: anchors of their own cost scan time.
    b"Ran ",  # the end of a unittest or trial report
    b"##teamcity[testFailed",
    b"##teamcity[buildProblem",
    b"##vso[task.logissue type=error",
)
# A pytest section title so long that its rule is one to four `_` either side.
READER_PATTERNS = (rb" _{1,5}\r?\n",)


def _regex_scanner(literals: Sequence[bytes], patterns: Sequence[bytes]) -> Scanner:
    alternatives = [re.escape(literal) for literal in literals]
    if patterns:
        alternatives.append(b"(?P<pattern>" + b"|".join(patterns) + b")")
    pattern = re.compile(b"|".join(alternatives))

    def scan(chunk: ByteData) -> list[int]:
        return [
            match.end() - 1 if match.lastgroup == "pattern" else match.start()
            for match in pattern.finditer(chunk)
        ]

    return scan


def _hyperscan_scanner(literals: Sequence[bytes], patterns: Sequence[bytes]) -> Scanner:
    assert _hyperscan is not None
    expressions = [re.escape(literal) for literal in literals] + list(patterns)
    database = _hyperscan.Database(mode=_hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=expressions,
        ids=list(range(len(expressions))),
        elements=len(expressions),
        flags=[0] * len(expressions),
    )
    # A literal's hit is reported at its start; a pattern's at its last byte (its length varies).
    lengths = [len(literal) for literal in literals] + [1] * len(patterns)
    # A scratch space serves one scan at a time and hyperscan releases the GIL while scanning:
    # request threads sharing the database's default scratch raised ScratchInUseError.
    local = threading.local()

    def scratch() -> Any:
        own = getattr(local, "scratch", None)
        if own is None:
            own = local.scratch = _hyperscan.Scratch(database)
        return own

    def scan(chunk: ByteData) -> list[int]:
        hits: list[int] = []

        def on_match(pattern_id: int, _start: int, end: int, _flags: int, _ctx: Any) -> None:
            hits.append(end - lengths[pattern_id])

        database.scan(chunk, match_event_handler=on_match, scratch=scratch())
        return hits

    return scan


def build_scanner(
    literals: Sequence[bytes], patterns: Sequence[bytes] = (), *, prefer_hyperscan: bool = True
) -> Scanner:
    """A function returning, unordered, the start offset of every literal occurrence in a chunk
    and the offset of the last byte of every match of ``patterns`` (regular expressions that
    Hyperscan and ``re`` both read, never matching across a line)."""
    if not literals:
        raise ValueError("at least one anchor literal is needed")
    if prefer_hyperscan and _hyperscan is not None:
        return _hyperscan_scanner(literals, patterns)
    return _regex_scanner(literals, patterns)


def scanner_backend(*, prefer_hyperscan: bool = True) -> str:
    """Name of the backend ``build_scanner`` would use."""
    return "hyperscan" if prefer_hyperscan and _hyperscan is not None else "re"


def reader_scanner() -> Scanner:
    """The console reader's scanner: its anchors and those of every scanned signature."""
    return _reader_scanner(tuple(s.anchor.encode() for s in builtin_signatures() if s.scan))


@cache
def _reader_scanner(signature_anchors: tuple[bytes, ...]) -> Scanner:
    # Keyed by the anchors: a codemod added at run time (its own signatures) gets a new scanner.
    return build_scanner(READER_ANCHORS + signature_anchors, READER_PATTERNS)


def has_signature_anchor(text: str) -> bool:
    """Whether ``text`` holds the anchor of a signature the reader scans for."""
    return any(s.scan and s.anchor in text for s in builtin_signatures())


def anchor_lines(
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
