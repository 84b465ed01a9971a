"""A failure from a PR's pipeline: is its root cause on the base branch, or in the PR's diff?

A PR pipeline tests the PR's head. A contract violation that sits on the base branch breaks
every PR's pipeline the same way, so such a failure is repaired on the base branch's head, not on
the PR head: the fix PR carries none of the PR's own commits, and the failures of every PR on
that base sweep the same commit, find the same violations and so share one dedupe key (one fix
PR; the others link to it). A failure whose violations are only in the PR's diff is never
repaired on the PR head (``bot.forges.provenance``): the PR is reviewed instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bot.pipeline.repair.already_fixed import violations_at
from fixers.contracts.model import Contract
from fixers.sweep.violation_types import Violation


def root_cause_there(violations: Iterable[Violation], classes: Iterable[str]) -> bool:
    """Whether ``violations`` (found on the base) are this failure's root cause: one of them is
    in a class the log names (``Outer.Inner`` matches ``Inner``). A log naming no class says
    nothing about where the cause is: a violation the PR added itself would be blamed on the
    base (and its author told nothing in the PR needs to change), so the PR is reviewed."""
    named = set(classes)
    return any({v.class_qualname, v.class_qualname.rsplit(".", 1)[-1]} & named for v in violations)


def root_cause_at(
    *,
    repo: Path,
    commit: str,
    contract: Contract,
    classes: Iterable[str],
    worktrees_dir: Path,
) -> bool:
    """Whether ``commit`` (a trusted branch's tip) holds the failure's root cause: a violation
    of ``contract`` in a class the log names."""
    return root_cause_there(violations_at(repo, commit, contract, worktrees_dir), classes)
