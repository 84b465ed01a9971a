"""Line arithmetic for review suggestions: hunks, class spans and placing merged-tree lines on the
PR head (lines split and diffs written by ``fixers.sweep.unified_diff``).

Pure: text in, numbers and text out. Lines are split on ``\\n`` only (``str.splitlines`` also
splits on form feeds and ``\\u2028``, which git and GitHub do not), and compared without their
terminator, so a CRLF file and a file whose last line has no newline line up with the same text.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Hunk:
    """Old lines ``old_start:old_end`` become new lines ``new_start:new_end`` (0-based, end
    exclusive); an insertion has ``old_start == old_end``."""

    old_start: int
    old_end: int
    new_start: int
    new_end: int


def content(line: str) -> str:
    """A line without its terminator (``\\n`` or ``\\r\\n``)."""
    return line.removesuffix("\n").removesuffix("\r")


def newline_of(lines: Sequence[str]) -> str:
    """The file's line terminator: ``\\r\\n`` when most terminated lines use it, else ``\\n``."""
    ended = [line for line in lines if line.endswith("\n")]
    crlf = sum(line.endswith("\r\n") for line in ended)
    return "\r\n" if ended and crlf * 2 > len(ended) else "\n"


def hunks(old: Sequence[str], new: Sequence[str]) -> list[Hunk]:
    """The changed regions between two files, compared by line content.

    A pure insertion is slid up as far as the text allows, so an appended method follows the
    last line of its class rather than a blank line below it (difflib may pick either).
    """
    a = [content(line) for line in old]
    b = [content(line) for line in new]
    found: list[Hunk] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        # Slide only through the equal run above, keeping one equal line (the anchor of an
        # insertion's suggestion) between this hunk and the one before it.
        floor_a, floor_b = (found[-1].old_end, found[-1].new_end) if found else (0, 0)
        while tag == "insert" and i1 - 1 > floor_a and j1 > floor_b and a[i1 - 1] == b[j2 - 1]:
            i1, i2, j1, j2 = i1 - 1, i2 - 1, j1 - 1, j2 - 1
        found.append(Hunk(i1, i2, j1, j2))
    return found


def head_positions(merged: Sequence[str], head: Sequence[str]) -> dict[int, int]:
    """For each merged line that the head file has unchanged, its index in the head file."""
    a = [content(line) for line in merged]
    b = [content(line) for line in head]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return {
        block.a + k: block.b + k
        for block in matcher.get_matching_blocks()
        for k in range(block.size)
    }


def class_spans(text: str) -> list[tuple[int, int, str]]:
    """``(first, last, qualname)`` of every class, 1-based inclusive lines, decorators included;
    nested classes are dotted (``Outer.Inner``). Empty when the text does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    spans: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                name = f"{prefix}{child.name}"
                spans.append((first, child.end_lineno or child.lineno, name))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return spans


def classes_touching(spans: Sequence[tuple[int, int, str]], first: int, last: int) -> set[str]:
    """The classes whose span overlaps lines ``first..last`` (1-based, inclusive)."""
    if last < first:
        return set()
    return {name for start, end, name in spans if start <= last and first <= end}


def replaced(
    lines: Sequence[str], start: int, stop: int, texts: Sequence[str], newline: str
) -> list[str]:
    """``lines`` with ``lines[start:stop]`` replaced by ``texts`` (contents, no terminators).

    Every new line ends with ``newline``, except that a file without a final newline keeps
    none: an edit that reaches its end leaves the new last line unterminated (and an insertion
    there terminates the old last line, which is no longer last).
    """
    result = list(lines)
    new = [text + newline for text in texts]
    at_end = stop == len(result) and bool(result) and not result[-1].endswith("\n")
    if at_end and start == stop and new:
        result[-1] += newline
    if at_end and new:
        new[-1] = texts[-1]
    result[start:stop] = new
    return result
