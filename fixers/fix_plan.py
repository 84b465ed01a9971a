"""Turn violations into codemod invocations: which command, which classes, which options."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from libcst.codemod import Codemod, CodemodContext

from fixers.codemods.add_hook_stub import AddHookStubCommand
from fixers.codemods.rename_forbidden import RenameForbiddenCommand
from fixers.codemods.snapshot_state import SnapshotStateCommand
from fixers.contracts import Contract
from fixers.index import Hierarchy, RepoIndex
from fixers.outcome import Skip
from fixers.violations import Violation
from fixers.violations_state import find_class


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


def _method(index: RepoIndex, rel: str, qualname: str, name: str) -> ast.FunctionDef | None:
    tree = index.tree(rel)
    cls = find_class(tree, qualname) if tree is not None else None
    if cls is None:
        return None
    found = [s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == name]
    return found[0] if found else None


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
    func = _method(index, v.path, member.facts.qualname, contract.forbidden)
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


def _strip_optional(node: ast.expr | None) -> ast.expr | None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        for side in (node.left, node.right):
            if not (isinstance(side, ast.Constant) and side.value is None):
                return side
    if isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("Optional"):
        return node.slice
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _strip_optional(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return None
    return node


def _param_annotation(func: ast.FunctionDef | None, param: str) -> ast.expr | None:
    if func is None:
        return None
    args = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
    return _strip_optional(next((a.annotation for a in args if a.arg == param), None))


def _annotations(
    index: RepoIndex, hierarchy: Hierarchy, v: Violation, method: str
) -> tuple[list[str], list[str]]:
    """``param=Type`` entries and ``module:Name`` TYPE_CHECKING imports for the restore hook."""
    contract = hierarchy.contract
    member = hierarchy.members[v.class_qualname]
    own = _method(index, v.path, member.facts.qualname, method)
    facts = index.facts.get(v.path)
    bound = (
        {local: index.resolve(member.module, local) for local, _ in facts.bindings} if facts else {}
    )
    base = next(iter(sorted(hierarchy.bases)), None)
    base_rel, base_cls = index.classes[base] if base else (None, None)
    base_hook = (
        _method(index, base_rel, base_cls.qualname, contract.restore_hook or "")
        if base_rel and base_cls
        else None
    )
    entries: list[str] = []
    imports: list[str] = []
    for param in contract.metadata_params:
        node = _param_annotation(own, param)
        if node is not None:
            entries.append(f"{param}={ast.unparse(node)}")
            continue
        node = _param_annotation(base_hook, param)
        name = ast.unparse(node) if isinstance(node, ast.Name | ast.Attribute) else None
        if name is None or base_rel is None:
            continue
        target = index.resolve(index.files[base_rel].module, name)
        local = next((k for k, q in bound.items() if q == target), None)
        if local is not None:
            entries.append(f"{param}={local}")
        elif "." in target:
            module, _, cls_name = target.rpartition(".")
            entries.append(f"{param}={cls_name}")
            imports.append(f"{module}:{cls_name}")
    return entries, imports


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
    entries, imports = _annotations(index, hierarchy, v, method)
    if renamed and method == contract.forbidden:
        method = contract.hook
    data = index.read(v.path) or b""
    future = b"from __future__ import annotations" in data
    quote = bool(imports) or (python is not None and python < (3, 10) and not future)
    return Step(
        "snapshot_state",
        SnapshotStateCommand,
        {
            "classes": [member.facts.qualname],
            "method": method,
            "saves": [f"{local}:{p}.{a}" for local, p, a in v.saves],
            "restore_hook": contract.restore_hook,
            "params": list(contract.metadata_params),
            "annotations": entries,
            "type_imports": imports,
            "quote_annotations": quote,
            "line_length": line_length,
        },
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
    order = {"rename": 0, "stub": 1, "snapshot": 2}
    renamed: set[tuple[str, str]] = set()
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
        else:
            step = _snapshot_step(
                index, hierarchy, v, (v.contract, v.class_qualname) in renamed, python, line_length
            )
        if isinstance(step, Skip):
            skips.append(step)
        else:
            plan.steps.append(step)
    return [p for p in plans.values() if p.steps], skips
