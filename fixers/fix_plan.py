"""Turn violations into codemod invocations: which command, which classes, which options."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from libcst.codemod import Codemod, CodemodContext

from fixers.codemods.add_hook_stub import AddHookStubCommand
from fixers.codemods.pending_fixup import PendingFixupCommand
from fixers.codemods.rename_forbidden import RenameForbiddenCommand
from fixers.codemods.snapshot_state import SnapshotStateCommand
from fixers.contracts import Contract
from fixers.fix_types import class_method, hook_annotations, type_checking_only
from fixers.index import Hierarchy, RepoIndex
from fixers.outcome import Skip
from fixers.violation_types import Violation


@dataclass(frozen=True)
class Step:
    """One codemod run on one file: the command class and its keyword options."""

    name: str
    command: type[Codemod]
    options: dict[str, object]
    classes: tuple[str, ...]

    def make(self) -> Codemod:
        """A fresh command instance (commands keep per-run state)."""
        return self.command(CodemodContext(), **self.options)


@dataclass
class FilePlan:
    """Every step for one file, in order: renames, then stubs, then snapshots."""

    path: str
    module: str
    steps: list[Step] = field(default_factory=list)


def _calls_super(func: ast.FunctionDef, name: str) -> bool:
    return any(
        isinstance(n, ast.Attribute)
        and n.attr == name
        and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Name)
        and n.value.func.id == "super"
        for n in ast.walk(func)
    )


def _rename_step(index: RepoIndex, hierarchy: Hierarchy, v: Violation) -> Step | Skip:
    contract = hierarchy.contract
    member = hierarchy.members[v.class_qualname]
    func = class_method(index, v.path, member.facts.qualname, contract.forbidden)
    super_classes: list[str] = []
    if func is not None and _calls_super(func, contract.forbidden):
        parents = hierarchy.ancestors(v.class_qualname)[1:]
        if not any({contract.forbidden, contract.hook} & set(p.facts.methods) for p in parents):
            return Skip(
                v.path,
                f"{member.facts.qualname}.{contract.forbidden} calls "
                f"super().{contract.forbidden}, which would re-enter the base wrapper: "
                "needs a human",
                v.class_qualname,
            )
        super_classes.append(member.facts.qualname)
    return Step(
        "rename_forbidden",
        RenameForbiddenCommand,
        {
            "classes": [member.facts.qualname],
            "forbidden": contract.forbidden,
            "hook": contract.hook,
            "super_classes": super_classes,
        },
        (member.facts.qualname,),
    )


def _snapshot_step(
    index: RepoIndex,
    hierarchy: Hierarchy,
    v: Violation,
    renamed: bool,
    python: tuple[int, int] | None,
    line_length: int,
) -> Step:
    contract = hierarchy.contract
    member = hierarchy.members[v.class_qualname]
    method = v.method or contract.hook
    entries, imports = hook_annotations(index, hierarchy, v.class_qualname, v.path, method)
    if renamed and method == contract.forbidden:
        method = contract.hook
    data = index.read(v.path) or b""
    future = b"from __future__ import annotations" in data
    tree = index.tree(v.path)
    guarded = type_checking_only(tree) if tree is not None else set()
    names = {entry.partition("=")[2].split(".")[0] for entry in entries}
    quote = not future and (
        bool(imports) or bool(names & guarded) or (python is not None and python < (3, 10))
    )
    common: dict[str, object] = {
        "classes": [member.facts.qualname],
        "method": method,
        "restore_hook": contract.restore_hook,
        "params": list(contract.metadata_params),
        "annotations": entries,
        "type_imports": imports,
        "quote_annotations": quote,
        "line_length": line_length,
    }
    if v.fix == "pending-flag":
        options = {**common, "adjust": v.fixup[0], "compensate": v.fixup[1], "flag": v.flag}
        return Step("pending_fixup", PendingFixupCommand, options, (member.facts.qualname,))
    saves = [f"{holder}:{p}.{a}:{kind}" for holder, p, a, kind in v.saves]
    return Step(
        "snapshot_state",
        SnapshotStateCommand,
        {**common, "saves": saves},
        (member.facts.qualname,),
    )


def plan_fixes(
    index: RepoIndex,
    hierarchies: list[Hierarchy],
    violations: list[Violation],
    python: tuple[int, int] | None,
    line_length: int,
) -> tuple[list[FilePlan], list[Skip]]:
    """Steps per file for every fixable violation; unfixable ones become skips with reasons."""
    by_contract: dict[str, Hierarchy] = {h.contract.name: h for h in hierarchies}
    plans: dict[str, FilePlan] = {}
    skips: list[Skip] = []
    order = {"rename": 0, "stub": 1, "snapshot": 2, "pending-flag": 3}
    renamed: set[tuple[str, str]] = set()
    hooked: set[tuple[str, str]] = set()
    for v in sorted(violations, key=lambda x: order.get(x.fix or "", 3)):
        if v.fix is None:
            skips.append(Skip(v.path, v.detail, v.class_qualname))
            continue
        hierarchy = by_contract[v.contract]
        contract: Contract = hierarchy.contract
        plan = plans.setdefault(v.path, FilePlan(v.path, index.files[v.path].module))
        member = hierarchy.members[v.class_qualname]
        step: Step | Skip
        if v.fix == "rename":
            step = _rename_step(index, hierarchy, v)
            if isinstance(step, Step):
                renamed.add((v.contract, v.class_qualname))
        elif v.fix == "stub":
            step = Step(
                "add_hook_stub",
                AddHookStubCommand,
                {"classes": [member.facts.qualname], "hook": contract.hook, "base": contract.base},
                (member.facts.qualname,),
            )
        elif (v.contract, v.class_qualname) in hooked:
            step = Skip(
                v.path,
                f"{v.detail}; another fix already overrides {contract.restore_hook} in this "
                "class: a human must combine both in one override",
                v.class_qualname,
            )
        else:
            hooked.add((v.contract, v.class_qualname))
            step = _snapshot_step(
                index, hierarchy, v, (v.contract, v.class_qualname) in renamed, python, line_length
            )
        if isinstance(step, Skip):
            skips.append(step)
        else:
            plan.steps.append(step)
    return [p for p in plans.values() if p.steps], skips
