"""A failure from a PR's pipeline: is its root cause on the base branch, or in the PR's diff?

A PR pipeline tests the PR's head. A contract violation that sits on the base branch breaks
every PR's pipeline the same way, so such a failure is repaired on the base branch's head, not on
the PR head: the fix PR carries none of the PR's own commits, and the failures of every PR on
that base sweep the same commit, find the same violations and so share one dedupe key (one fix
PR; the others link to it). A failure whose violations are only in the PR's diff is left to the
PR head, as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bot.pipeline.already_fixed import base_head, violations_at
from fixers.contracts import Contract
from fixers.violation_types import Violation


def root_cause_there(violations: Iterable[Violation], classes: Iterable[str]) -> bool:
    """Whether ``violations`` (found on the base) are this failure's root cause: one of them is
    in a class the log names (``Outer.Inner`` matches ``Inner``). A log naming no class says
    nothing about where the cause is: a violation the PR added itself would be blamed on the
    base (and its author told nothing in the PR needs to change), so the PR head is repaired."""
    named = set(classes)
    return any({v.class_qualname, v.class_qualname.rsplit(".", 1)[-1]} & named for v in violations)


def base_commit_for(
    *,
    repo: Path,
    base_ref: str | None,
    contract: Contract,
    classes: Iterable[str],
    worktrees_dir: Path,
) -> str | None:
    """The base branch's head when the failure's root cause is there (None: it is not, or the
    branch does not resolve in ``repo``)."""
    head = base_head(repo, base_ref)
    if head is None:
        return None
    found = violations_at(repo, head, contract, worktrees_dir)
    return head if root_cause_there(found, classes) else None
