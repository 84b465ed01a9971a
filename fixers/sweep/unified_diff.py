"""Unified diffs that ``git apply`` takes: lines split as git counts them, and ``\\ No newline at
end of file`` where a last line has no terminator (``difflib.unified_diff`` omits the marker, and
``git apply`` then refuses the patch or adds a newline the file never had).

Pure: text in, text out. Lines are split on ``\\n`` only: ``str.splitlines`` also splits on form
feeds and ``\\u2028``, which git does not.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

CONTEXT = 3  # git's and GitHub's default number of context lines around a hunk


def split_lines(text: str) -> list[str]:
    """``text`` as lines with their terminators, split on ``\\n`` only."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _range(start: int, stop: int) -> str:
    # The unified format's ``start,length``; an empty range names the line before it.
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def unified_diff(path: str, old: Sequence[str], new: Sequence[str]) -> str:
    """A unified diff of ``path`` with ``a/`` and ``b/`` prefixes that ``git apply`` takes,
    with ``\\ No newline at end of file`` where a last line has no terminator (difflib omits it)."""
    out = [f"--- a/{path}\n", f"+++ b/{path}\n"]

    def emit(prefix: str, lines: Sequence[str]) -> None:
        for line in lines:
            out.append(prefix + line)
            if not line.endswith("\n"):
                out.append("\n\\ No newline at end of file\n")

    matcher = difflib.SequenceMatcher(None, list(old), list(new), autojunk=False)
    groups = list(matcher.get_grouped_opcodes(CONTEXT))
    if not groups:
        return ""
    for group in groups:
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                emit(" ", old[a1:a2])
            else:
                emit("-", old[a1:a2])
                emit("+", new[b1:b2])
    return "".join(out)
