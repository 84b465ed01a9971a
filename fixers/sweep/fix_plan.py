"""Turn violations into codemod invocations: which command, which classes, which options.

Each fix is looked up in the codemod registry (``fixers.codemods.registry``): the codemod that
declares it builds the step, so this module names no codemod.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fixers.codemods.registry import PlanContext, Registry, Step, builtin_codemods
from fixers.sweep.index import Hierarchy, RepoIndex
from fixers.sweep.outcome import Skip
from fixers.sweep.violation_types import Violation

__all__ = ["FilePlan", "PlanContext", "Step", "plan_fixes"]


@dataclass
class FilePlan:
    """Every step for one file, in the codemods' declared order (renames, stubs, snapshots…)."""

    path: str
    module: str
    steps: list[Step] = field(default_factory=list)


def _rank(codemods: Registry) -> dict[str | None, int]:
    """Each fix's plan order; violations no codemod fixes sort with the last codemods."""
    order: dict[str | None, int] = {spec.fix: spec.order for spec in codemods.codemods}
    order[None] = max(order.values(), default=0)
    return order


def plan_fixes(
    index: RepoIndex,
    hierarchies: list[Hierarchy],
    violations: list[Violation],
    python: tuple[int, int] | None,
    line_length: int,
) -> tuple[list[FilePlan], list[Skip]]:
    """Steps per file for every fixable violation; unfixable ones become skips with reasons."""
    codemods = builtin_codemods()
    by_contract: dict[str, Hierarchy] = {h.contract.name: h for h in hierarchies}
    plans: dict[str, FilePlan] = {}
    skips: list[Skip] = []
    rank = _rank(codemods)
    context = PlanContext(index, python, line_length)
    for v in sorted(violations, key=lambda x: rank.get(x.fix, rank[None])):
        if v.fix is None:
            skips.append(Skip(v.path, v.detail, v.class_qualname))
            continue
        spec = codemods.for_fix(v.fix)
        hierarchy = by_contract[v.contract]
        plan = plans.setdefault(v.path, FilePlan(v.path, index.files[v.path].module))
        step = spec.build_step(context, hierarchy, v)
        if isinstance(step, Skip):
            skips.append(step)
        else:
            plan.steps.append(step)
    return [p for p in plans.values() if p.steps], skips
