"""The state-flow model of one worker call: which metadata changes the contract must restore.

Rules (docs/sweep.md, "State flow"), applied to the events of ``fixers.state.trace``:

1. A success-path save/restore pair (a field captured before a region and written back after
   it) whose field is changed in between, outside the base's bracket, is state the restore hook
   must restore on failure too: a ``transient-state`` finding covering every field of every pair.
2. Changes between the repository's prepare/restore bracket, to fields the bracket saves, are the
   base hook's job: never a finding.
3. An in-place adjustment (``x[i] += n``) compensated later by the opposite adjustment of the
   same field (never one on the other arm of an ``if``: the two do not run in one call), with a
   call (a point of failure) in between, outside a bracket that covers it,
   is a deferred fix-up: a
   ``deferred-fixup`` finding (pending-flag fix when the compensation can run in the hook).
4. Every other change (back-references, caches kept across calls, per-call scratch) is
   information only (``Observation``).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from fixers.state.trace import Event

Category = Literal["bracket", "paired", "back-reference", "cache", "scratch"]


@dataclass(frozen=True)
class Pair:
    """A field saved into ``holder`` and written back only on the success path."""

    param: str
    attr: str
    holder: str
    tensor: bool
    save: Event
    restore: Event
    changes: tuple[Event, ...]


@dataclass(frozen=True)
class Fixup:
    """An in-place adjustment compensated later, unprotected if the call fails in between."""

    param: str
    attr: str
    adjust: Event
    compensate: Event


@dataclass(frozen=True)
class Observation:
    """A change that is not a violation, and why (``sweep --explain``)."""

    category: Category
    event: Event

    def reason(self) -> str:
        """Why the change needs no restore of ours."""
        return {
            "bracket": "saved and restored by the base's prepare/restore bracket",
            "paired": "restored on failure by the snapshot of its save/restore pair",
            "back-reference": "a reference to the worker itself, set on purpose",
            "cache": "a cache kept across calls",
            "scratch": "per-call state every call overwrites",
        }[self.category]


@dataclass(frozen=True)
class StateFlow:
    """Findings of one entry method."""

    pairs: tuple[Pair, ...]
    fixups: tuple[Fixup, ...]
    observations: tuple[Observation, ...]


def _open_brackets(events: Sequence[Event]) -> list[tuple[frozenset[str] | None, ...]]:
    """For each event, the brackets open at that point (innermost last)."""
    stack: list[frozenset[str] | None] = []
    out: list[tuple[frozenset[str] | None, ...]] = []
    for event in events:
        if event.kind == "open":
            stack.append(event.fields)
        elif event.kind == "close" and stack:
            stack.pop()
        out.append(tuple(stack))
    return out


def _covered(brackets: tuple[frozenset[str] | None, ...], attr: str) -> bool:
    return any(fields is None or attr in fields for fields in brackets)


def _pairs(
    events: Sequence[Event], brackets: list[tuple[frozenset[str] | None, ...]]
) -> list[Pair]:
    found: dict[tuple[str, str, str], Pair] = {}
    for at, save in enumerate(events):
        if save.kind != "save":
            continue
        key = (save.param, save.attr, save.holder)
        for later in range(at + 1, len(events)):
            restore = events[later]
            if restore.kind != "restore" or (restore.param, restore.attr, restore.holder) != key:
                continue
            if restore.excludes(save):
                continue
            changes = tuple(
                events[i]
                for i in range(at + 1, later)
                if events[i].kind == "mutate"
                and (events[i].param, events[i].attr) == key[:2]
                and not _covered(brackets[i], save.attr)
            )
            if changes and not restore.in_finally and key not in found:
                found[key] = Pair(*key, save.tensor, save, restore, changes)
            break
    return list(found.values())


def _opposite(a: Event, b: Event) -> bool:
    """``+=`` then ``-=`` (or the reverse) of the same field: an adjustment and its undoing (the
    amounts may differ: PARD bumps by 1 and rewinds by ``1 - accepted``)."""
    return {a.op, b.op} == {"+", "-"}


def _fixups(
    events: Sequence[Event], brackets: list[tuple[frozenset[str] | None, ...]]
) -> list[Fixup]:
    """Adjustments outside a covering bracket, each paired with the next opposite one."""
    open_adjustments = [
        i
        for i, e in enumerate(events)
        if e.kind == "mutate" and e.op in ("+", "-") and not _covered(brackets[i], e.attr)
    ]
    found: list[Fixup] = []
    used: set[int] = set()
    for at in open_adjustments:
        if at in used:
            continue
        adjust = events[at]
        later = next(
            (
                j
                for j in open_adjustments
                if j > at
                and j not in used
                and (events[j].param, events[j].attr) == (adjust.param, adjust.attr)
                and _opposite(adjust, events[j])
                and not adjust.excludes(events[j])
            ),
            None,
        )
        if later is None:
            continue
        used.update((at, later))
        compensate = events[later]
        # Undone before anything can fail (two adjustments of one step): nothing deferred.
        deferred = any(events[i].kind == "call" for i in range(at + 1, later))
        if deferred and not compensate.in_finally:
            found.append(Fixup(adjust.param, adjust.attr, adjust, compensate))
    return found


def _mentions_self(node: ast.expr | None) -> bool:
    return node is not None and any(
        isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(node)
    )


def _category(event: Event, covered: bool, paired: set[int]) -> Category:
    if covered:
        return "bracket"
    if id(event) in paired:
        return "paired"
    if isinstance(event.value, ast.Name) and event.value.id == "self":
        return "back-reference"
    if event.lazy or (_mentions_self(event.value) and event.op == "="):
        return "cache"
    return "scratch"


def analyse(events: Sequence[Event]) -> StateFlow:
    """Pairs (rule 1), deferred fix-ups (rule 3) and everything else as observations."""
    brackets = _open_brackets(events)
    pairs = _pairs(events, brackets)
    fixups = _fixups(events, brackets)
    paired = {id(change) for pair in pairs for change in pair.changes}
    in_fixup = {id(e) for f in fixups for e in (f.adjust, f.compensate)}
    observations = [
        Observation(_category(event, _covered(brackets[i], event.attr), paired), event)
        for i, event in enumerate(events)
        if event.kind == "mutate" and id(event) not in in_fixup
    ]
    return StateFlow(tuple(pairs), tuple(fixups), tuple(observations))
