"""Normalising one console line: ANSI colours, Jenkins timestamps, branch and xdist prefixes."""

from __future__ import annotations

import re
from dataclasses import dataclass

from fixers.stages import parse_stage

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\r")
# `[2026-11-29T14:49:57.123Z] ` (Timestamper, ISO) and `14:49:57 ` / `[14:49:57] ` (time only).
_TIMESTAMP = re.compile(
    r"^(?:\[\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]"
    r"|\[?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?)\s?"
)
# `[H100_PCIe-PyTorch-1] ` printed by Jenkins before each line of a parallel branch.
_BRANCH = re.compile(r"^\[(?P<branch>[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)+)\]\s?")
# `[gw3] ` worker prefix and `[ 42%] ` progress prefix from pytest-xdist / pytest progress.
_XDIST = re.compile(r"^(?:\[gw\d+\]\s+)?(?:\[\s*\d+%\]\s+)?")


@dataclass(frozen=True)
class CleanLine:
    """A console line without decoration, and the parallel stage it was printed by, if any."""

    text: str
    branch_stage: str | None


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences and carriage returns."""
    return _ANSI.sub("", text) if ("\x1b" in text or "\r" in text) else text


def clean_line(raw: str) -> CleanLine:
    """Strip colours, a timestamp, a parallel-branch prefix and xdist prefixes from one line."""
    text = _TIMESTAMP.sub("", strip_ansi(raw), count=1)
    stage = None
    branch = _BRANCH.match(text)
    if branch and parse_stage(branch["branch"]) is not None:
        stage = branch["branch"]
        text = text[branch.end() :]
        text = _TIMESTAMP.sub("", text, count=1)
    text = _XDIST.sub("", text, count=1)
    return CleanLine(text.rstrip(), stage)


def clean_block(text: str) -> str:
    """Clean every line of a captured block, keeping pytest's indentation and markers."""
    return "\n".join(clean_line(line).text for line in text.splitlines())
