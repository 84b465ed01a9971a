"""Normalising one console line: escapes, CI prefixes (see ``prefixes``), xdist prefixes."""

from __future__ import annotations

import re
from collections.abc import Container
from dataclasses import dataclass

from fixers.intake.prefixes import strip_escapes, strip_prefixes

# `[gw3] ` worker prefix and `[ 42%] ` progress prefix from pytest-xdist / pytest progress.
_XDIST = re.compile(r"^(?:\[gw\d+\]\s+)?(?:\[\s*\d+%\]\s+)?")


@dataclass(frozen=True)
class CleanLine:
    """A console line without decoration, and what the decoration said.

    ``prefix`` is the CI prefix as printed (timestamps, branch, ``##[error]``), kept for evidence;
    ``command`` is a GitHub Actions / Azure log command (``error``, ``group``, ``section``, ...).
    """

    text: str
    branch_stage: str | None
    prefix: str = ""
    command: str | None = None


def clean_line(raw: str, branches: Container[str] = ()) -> CleanLine:
    """Strip escapes, every CI prefix (nested too) and xdist prefixes from one line."""
    stripped = strip_prefixes(strip_escapes(raw), branches)
    text = _XDIST.sub("", stripped.text, count=1)
    prefix = stripped.prefix.lstrip("\ufeff").rstrip()
    return CleanLine(text.rstrip(), stripped.branch, prefix, stripped.command)


def clean_block(text: str, branches: Container[str] = ()) -> str:
    """Clean every line of a captured block, keeping pytest's indentation and markers."""
    return "\n".join(clean_line(line, branches).text for line in text.splitlines())
