"""What the contract review of a PR says: codemod changes turned into GitHub suggestions and
patches on the PR head's lines (pure, no I/O).

The codemods run on the PR head merged onto its base; the review is read, and its suggestions
applied, on the PR head. A changed region whose old lines the head has unchanged is placed on
the head's lines; renames and stubs there become ``suggestion`` blocks (one click each), every
other fix (the snapshot hook, the pending flag) and every region the head does not have as-is
becomes a patch. Only regions inside the classes of the given violations are proposed, plus the
module-level lines (imports) of a file that has some.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bot.db.inert_text import code_span
from bot.forges.review_lines import (
    Hunk,
    class_spans,
    classes_touching,
    content,
    head_positions,
    hunks,
    newline_of,
    replaced,
)
from fixers.codemods.registry import builtin_codemods
from fixers.sweep.outcome import FileChange
from fixers.sweep.unified_diff import CONTEXT, split_lines, unified_diff
from fixers.sweep.violation_types import Violation


def offered_as(review: str) -> frozenset[str]:
    """The fixes a review offers as ``review`` ("suggestion" or "patch"), as each codemod
    declares (``CodemodSpec.review``)."""
    return frozenset(c.fix for c in builtin_codemods().codemods if c.review == review)


@dataclass(frozen=True)
class Suggestion:
    """One ``suggestion`` block replacing lines ``start_line..line`` of ``path`` (RIGHT side).

    ``replacement`` is the new lines, each ending in ``\\n`` (empty: the lines are deleted);
    ``patch`` is the same change as a unified diff at the PR head, for when GitHub refuses a
    comment on these lines.
    """

    path: str
    start_line: int
    line: int
    replacement: str
    message: str
    patch: str = ""


@dataclass(frozen=True)
class PatchBlock:
    """A fix shown as a unified diff (``a/``/``b/`` paths, as ``git apply`` takes it).

    ``at_head`` is False when the PR head does not have the lines as the merge has them (the
    base changed them): the patch then applies once the base is merged into the PR.
    """

    path: str
    patch: str
    message: str
    at_head: bool = True


@dataclass(frozen=True)
class ReviewPlan:
    """Everything the review of one PR head would post."""

    head_sha: str
    suggestions: tuple[Suggestion, ...]
    patches: tuple[PatchBlock, ...]
    violations: tuple[str, ...]  # one display line per violation, for the review body

    @property
    def clean(self) -> bool:
        """True when the PR introduces no violation."""
        return not self.violations

    def digest(self) -> str:
        """A stable hash of what would be posted (the head sha is not part of it)."""
        data = [
            [dataclasses.astuple(s) for s in self.suggestions],
            [dataclasses.astuple(p) for p in self.patches],
            list(self.violations),
        ]
        return hashlib.sha256(json.dumps(data).encode()).hexdigest()[:20]


@dataclass
class _File:
    """The plan of one changed file while it is being built."""

    change: FileChange
    violations: list[Violation]
    head: list[str] | None
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    positions: dict[int, int] = field(default_factory=dict)
    spans: tuple[list[tuple[int, int, str]], list[tuple[int, int, str]]] = ([], [])
    suggested: list[tuple[Hunk, list[Violation]]] = field(default_factory=list)
    patched: list[tuple[Hunk, list[Violation]]] = field(default_factory=list)
    module_level: list[Hunk] = field(default_factory=list)


def _same_class(violation: Violation, qualname: str) -> bool:
    return violation.class_qualname == qualname or violation.class_qualname.endswith(f".{qualname}")


def _renames(old: str, new: str, name: str) -> bool:
    """``new`` is ``old`` with every whole-word ``name`` replaced by some identifier."""
    parts = re.split(rf"\b{re.escape(name)}\b", old)
    return len(parts) > 1 and re.fullmatch(r"\w+".join(map(re.escape, parts)), new) is not None


def _is_rename(item: _File, hunk: Hunk, methods: set[str]) -> bool:
    old = item.before[hunk.old_start : hunk.old_end]
    new = item.after[hunk.new_start : hunk.new_end]
    if not old or len(old) != len(new):
        return False
    pairs = zip(old, new, strict=True)
    return all(any(_renames(content(a), content(b), m) for m in methods) for a, b in pairs)


def _classify(item: _File, hunk: Hunk) -> None:
    """File ``hunk`` under suggestions, patches or module-level lines (or drop it)."""
    before_spans, after_spans = item.spans
    classes = classes_touching(before_spans, hunk.old_start + 1, hunk.old_end)
    classes |= classes_touching(after_spans, hunk.new_start + 1, hunk.new_end)
    if not classes:
        item.module_level.append(hunk)
        return
    matched = [v for v in item.violations if any(_same_class(v, q) for q in classes)]
    renames = [v for v in matched if v.fix == "rename"]
    if renames and _is_rename(item, hunk, {v.method for v in renames if v.method}):
        item.suggested.append((hunk, renames))
    elif patched := [v for v in matched if v.fix in offered_as("patch")]:
        item.patched.append((hunk, patched))
    elif suggested := [v for v in matched if v.fix in offered_as("suggestion")]:
        item.suggested.append((hunk, suggested))


def _head_span(item: _File, hunk: Hunk) -> tuple[int, int] | None:
    """Where ``hunk``'s old lines sit in the head file (``start, stop``), if it has them as-is;
    for an insertion, the empty span at the head's insertion point."""
    if item.head is None:
        return None
    if hunk.old_start == hunk.old_end:
        if hunk.old_start == 0:
            return (0, 0) if not item.before else _shift(item.positions.get(0), 0)
        return _shift(item.positions.get(hunk.old_start - 1), 1)
    first = item.positions.get(hunk.old_start)
    if first is None:
        return None
    for k in range(hunk.old_end - hunk.old_start):
        if item.positions.get(hunk.old_start + k) != first + k:
            return None
    return first, first + hunk.old_end - hunk.old_start


def _shift(position: int | None, by: int) -> tuple[int, int] | None:
    return None if position is None else (position + by, position + by)


def _suggestion(item: _File, hunk: Hunk, found: list[Violation]) -> Suggestion | None:
    span = _head_span(item, hunk)
    if span is None or item.head is None or not item.head:
        return None
    start, stop = span
    texts = [content(line) for line in item.after[hunk.new_start : hunk.new_end]]
    if start == stop:  # an insertion: the suggestion rewrites the line next to it as well
        anchor = start - 1 if start > 0 else 0
        edge = content(item.head[anchor])
        texts = [*texts, edge] if start == 0 else [edge, *texts]
        start, stop = anchor, anchor + 1
    new = replaced(item.head, start, stop, texts, newline_of(item.head))
    return Suggestion(
        item.change.path,
        start + 1,
        stop,
        "".join(f"{text}\n" for text in texts),
        "; ".join(dict.fromkeys(v.detail for v in found)),
        unified_diff(item.change.path, item.head, new),
    )


def _near(span: tuple[int, int], others: Sequence[tuple[int, int]]) -> bool:
    return any(span[0] - CONTEXT <= b and a <= span[1] + CONTEXT for a, b in others)


def _patch_blocks(item: _File, parts: list[tuple[Hunk, list[Violation]]]) -> list[PatchBlock]:
    """One patch at the head for the parts the head has, one at the merge for the rest."""
    if not parts:
        return []
    message = "; ".join(dict.fromkeys(v.detail for _, found in parts for v in found))
    message = message or "the module-level lines (imports) the fix needs"
    path = item.change.path
    spans = [(hunk, _head_span(item, hunk)) for hunk, _ in parts]
    placed = [(hunk, span) for hunk, span in spans if span is not None]
    blocks: list[PatchBlock] = []
    if placed and item.head is not None:
        head, newline = list(item.head), newline_of(item.head)
        for hunk, (start, stop) in sorted(placed, key=lambda p: p[1], reverse=True):
            texts = [content(line) for line in item.after[hunk.new_start : hunk.new_end]]
            head = replaced(head, start, stop, texts, newline)
        blocks.append(PatchBlock(path, unified_diff(path, item.head, head), message))
    unplaced = [hunk for hunk, span in spans if span is None]
    if unplaced:
        merged = list(item.before)
        for hunk in sorted(unplaced, key=lambda h: h.old_start, reverse=True):
            merged[hunk.old_start : hunk.old_end] = item.after[hunk.new_start : hunk.new_end]
        blocks.append(PatchBlock(path, unified_diff(path, item.before, merged), message, False))
    return blocks


def _plan_file(item: _File) -> tuple[list[Suggestion], list[PatchBlock], dict[Violation, set[str]]]:
    item.before, item.after = split_lines(item.change.before), split_lines(item.change.after)
    item.spans = class_spans(item.change.before), class_spans(item.change.after)
    if item.head is not None:
        item.positions = head_positions(item.before, item.head)
    for hunk in hunks(item.before, item.after):
        _classify(item, hunk)
    patched = list(item.patched)
    if patched or item.suggested:
        patched += [(hunk, []) for hunk in item.module_level]
    made = [(hunk, found, _suggestion(item, hunk, found)) for hunk, found in item.suggested]
    # A suggestion stays out of every patch's context lines, so that the suggestions and the
    # patch apply in either order; one that cannot stay out joins the patch (until none moves).
    moved = True
    while moved:
        taken = [s for hunk, _ in patched if (s := _head_span(item, hunk)) is not None]
        near = [m for m in made if m[2] is None or _near((m[2].start_line - 1, m[2].line), taken)]
        patched += [(hunk, found) for hunk, found, _ in near]
        made = [m for m in made if m not in near]
        moved = bool(near)
    how: dict[Violation, set[str]] = {}
    for kind, parts in (("a suggestion", made), ("a patch", patched)):
        for part in parts:
            for v in part[1]:
                how.setdefault(v, set()).add(kind)
    suggestions = [suggestion for _, _, suggestion in made if suggestion is not None]
    return suggestions, _patch_blocks(item, patched), how


def _display(violation: Violation, line: int, how: str) -> str:
    name = violation.class_qualname.rsplit(".", 1)[-1]
    where = code_span(f"{violation.path}:{line}")
    return f"{where} {code_span(name)} ({violation.kind}): {violation.detail} — {how}"


def plan_review(
    head_sha: str,
    violations: Sequence[Violation],
    changes: Sequence[FileChange],
    head_text: Callable[[str], str | None],
) -> ReviewPlan:
    """The review of ``head_sha`` for the ``violations`` a PR introduces.

    ``changes`` are the codemods' results on the PR head merged onto its base; ``head_text``
    gives a file's text at the PR head (None when the head has no such file).
    """
    suggestions: list[Suggestion] = []
    patches: list[PatchBlock] = []
    how: dict[Violation, set[str]] = {}
    positions: dict[str, dict[int, int]] = {}
    for change in changes:
        mine = [v for v in violations if v.path == change.path]
        if not mine:
            continue
        text = head_text(change.path)
        item = _File(change, mine, None if text is None else split_lines(text))
        made, blocks, covered = _plan_file(item)
        suggestions += made
        patches += blocks
        for v, kinds in covered.items():
            how.setdefault(v, set()).update(kinds)
        positions[change.path] = item.positions
    lines = []
    for v in violations:
        line = positions.get(v.path, {}).get(v.line - 1, v.line - 1) + 1
        if v in how:
            fixed = "fixed by " + " and ".join(sorted(how[v])) + " below"
        elif v.fix is None:
            fixed = "needs a human: no automatic fix for this one"
        else:
            fixed = "needs a human: the automatic fix does not apply here"
        lines.append(_display(v, line, fixed))
    return ReviewPlan(
        head_sha,
        tuple(sorted(suggestions, key=lambda s: (s.path, s.line))),
        tuple(sorted(patches, key=lambda p: (p.path, not p.at_head))),
        tuple(lines),
    )
