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
from collections.abc import Callable, Sequence
from typing import Any

_hyperscan: Any
try:  # which branch runs depends on the platform
    import hyperscan as _hyperscan
except ImportError:
    _hyperscan = None

ByteData = bytes | bytearray | memoryview  # a block, or a view of the reader's buffer
Scanner = Callable[[ByteData], list[int]]


def _regex_scanner(literals: Sequence[bytes]) -> Scanner:
    pattern = re.compile(b"|".join(re.escape(literal) for literal in literals))

    def scan(chunk: ByteData) -> list[int]:
        return [match.start() for match in pattern.finditer(chunk)]

    return scan


def _hyperscan_scanner(literals: Sequence[bytes]) -> Scanner:
    assert _hyperscan is not None
    database = _hyperscan.Database(mode=_hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=[re.escape(literal) for literal in literals],
        ids=list(range(len(literals))),
        elements=len(literals),
        flags=[0] * len(literals),
    )
    lengths = [len(literal) for literal in literals]
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


def build_scanner(literals: Sequence[bytes], *, prefer_hyperscan: bool = True) -> Scanner:
    """A function returning the start offsets of every literal occurrence in a chunk (unordered)."""
    if not literals:
        raise ValueError("at least one anchor literal is needed")
    if prefer_hyperscan and _hyperscan is not None:
        return _hyperscan_scanner(literals)
    return _regex_scanner(literals)


def scanner_backend(*, prefer_hyperscan: bool = True) -> str:
    """Name of the backend ``build_scanner`` would use."""
    return "hyperscan" if prefer_hyperscan and _hyperscan is not None else "re"
