"""Unified diffs as syntax-highlighted HTML, one block per file (Pygments escapes the text)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

MAX_DIFF_CHARS = 400_000


@dataclass(frozen=True)
class FileDiff:
    """One file's part of a diff."""

    path: str
    added: int
    removed: int
    html: Markup


@cache
def _formatter() -> HtmlFormatter[str]:
    return HtmlFormatter(cssclass="diff", wrapcode=True)


def _path(header: str) -> str:
    # "diff --git a/x.py b/x.py" → "x.py"
    parts = header.split(" b/", 1)
    return parts[1].strip() if len(parts) == 2 else header.removeprefix("diff --git ").strip()


def split_files(diff: str) -> list[tuple[str, str]]:
    """``(path, text)`` per file of a ``git diff``; text without a file header is one block."""
    files: list[tuple[str, list[str]]] = []
    for line in diff.splitlines(keepends=True):
        if line.startswith("diff --git ") or not files:
            files.append((_path(line) if line.startswith("diff --git ") else "diff", []))
        files[-1][1].append(line)
    return [(path, "".join(lines)) for path, lines in files]


def highlight_diff(diff: str) -> tuple[list[FileDiff], bool]:
    """Highlighted files of ``diff`` and whether it was cut at ``MAX_DIFF_CHARS``."""
    truncated = len(diff) > MAX_DIFF_CHARS
    text = diff[:MAX_DIFF_CHARS]
    blocks = []
    for path, part in split_files(text):
        lines = part.splitlines()
        added = sum(1 for s in lines if s.startswith("+") and not s.startswith("+++"))
        removed = sum(1 for s in lines if s.startswith("-") and not s.startswith("---"))
        html = Markup(highlight(part, DiffLexer(), _formatter()))  # Pygments escapes the text
        blocks.append(FileDiff(path, added, removed, html))
    return blocks, truncated
