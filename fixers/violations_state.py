"""Extra transient metadata state in an implementation method (DESIGN §4, dynamic-tree pattern).

Two findings, both per method:

* *success-path-only restore*: ``orig = attn_metadata.x`` ... ``attn_metadata.x = ...`` ...
  ``attn_metadata.x = orig`` where no restore sits in a ``finally`` block. Fixed automatically
  by the snapshot codemod.
* *never restored*: ``attn_metadata.x`` is assigned or changed in place and no path puts it back.
  Reported with ``path:line``; a human decides.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class SavedState:
    """Metadata attributes saved into locals and put back only on the success path."""

    method: str
    line: int
    saves: tuple[tuple[str, str, str], ...]  # (local, param, attr) in source order


@dataclass(frozen=True)
class UnrestoredChange:
    """A metadata attribute changed with no path putting it back."""

    method: str
    line: int
    param: str
    attr: str


@dataclass(frozen=True)
class StateReport:
    """What one method (and the ``self`` methods it calls) does to metadata state."""

    saved: tuple[SavedState, ...]
    unrestored: tuple[UnrestoredChange, ...]


def _meta_attr(node: ast.expr, params: frozenset[str]) -> tuple[str, str] | None:
    """``(param, attr)`` for ``param.attr`` or ``param.attr[...]``; None otherwise."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in params
    ):
        return node.value.id, node.attr
    return None


class _Scan(ast.NodeVisitor):
    def __init__(self, params: frozenset[str]) -> None:
        self.params = params
        self.in_finally = 0
        self.saves: list[tuple[str, str, str, int]] = []
        self.restores: list[tuple[str, str, bool]] = []  # (param, attr, in_finally)
        self.changes: list[tuple[str, str, int]] = []
        self.managed: set[tuple[str, str]] = set()

    def visit_Call(self, node: ast.Call) -> None:
        """``attn_metadata.prepare_for_spec_dec("a", "b")``: the base saves and restores those."""
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in self.params
        ):
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    self.managed.add((func.value.id, arg.value))
        self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        for stmt in [*node.body, *node.orelse]:
            self.visit(stmt)
        for handler in node.handlers:
            self.visit(handler)
        self.in_finally += 1
        for stmt in node.finalbody:
            self.visit(stmt)
        self.in_finally -= 1

    visit_TryStar = visit_Try  # type: ignore[assignment]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        """Nested functions run at other times: their bodies are not this method's path."""

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        """See ``visit_FunctionDef``."""

    def visit_Assign(self, node: ast.Assign) -> None:
        saved = {local: (p, a) for local, p, a, _ in self.saves}
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found = _meta_attr(node.value, self.params)
            if found is not None and not isinstance(node.value, ast.Subscript):
                self.saves.append((node.targets[0].id, found[0], found[1], node.lineno))
        for target in node.targets:
            found = _meta_attr(target, self.params)
            if found is None:
                continue
            value = node.value
            if isinstance(value, ast.Name) and saved.get(value.id) == found:
                self.restores.append((found[0], found[1], self.in_finally > 0))
            else:
                self.changes.append((found[0], found[1], node.lineno))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        found = _meta_attr(node.target, self.params)
        if found is not None:
            self.changes.append((found[0], found[1], node.lineno))
        self.generic_visit(node)


def _called_self_methods(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    names: list[str] = []
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "self"
        ):
            names.append(node.func.attr)
    return names


def scan_method(
    func: ast.FunctionDef | ast.AsyncFunctionDef, params: frozenset[str]
) -> tuple[SavedState | None, list[UnrestoredChange]]:
    """Findings for one method body."""
    scan = _Scan(params)
    for stmt in func.body:
        scan.visit(stmt)
    restored_anywhere = {(p, a) for p, a, _ in scan.restores}
    restored_finally = {(p, a) for p, a, fin in scan.restores if fin}
    saves = tuple(
        (local, p, a)
        for local, p, a, _ in scan.saves
        if (p, a) in restored_anywhere
        and (p, a) not in restored_finally
        and any((p, a) == (cp, ca) for cp, ca, _ in scan.changes)
    )
    saved = None
    if saves:
        line = min(line for local, _, _, line in scan.saves if local in {s[0] for s in saves})
        saved = SavedState(func.name, line, saves)
    unrestored: dict[tuple[str, str], UnrestoredChange] = {}
    for p, a, line in scan.changes:
        handled = restored_anywhere | scan.managed
        if (p, a) not in handled and (p, a) not in unrestored:
            unrestored[(p, a)] = UnrestoredChange(func.name, line, p, a)
    return saved, list(unrestored.values())


def scan_implementation(cls: ast.ClassDef, method: str, params: tuple[str, ...]) -> StateReport:
    """Scan ``cls.method`` and, transitively, the methods of ``cls`` it calls on ``self``."""
    methods = {s.name: s for s in cls.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
    todo, seen = [method], set[str]()
    saved: list[SavedState] = []
    unrestored: list[UnrestoredChange] = []
    while todo:
        name = todo.pop(0)
        func = methods.get(name)
        if name in seen or func is None:
            continue
        seen.add(name)
        own = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
        found, changes = scan_method(func, frozenset(p for p in params if p in own))
        if found is not None:
            saved.append(found)
        unrestored.extend(changes)
        todo.extend(_called_self_methods(func))
    return StateReport(tuple(saved), tuple(unrestored))


def find_class(tree: ast.Module, qualname: str) -> ast.ClassDef | None:
    """The class statement named by a (possibly nested) qualname."""
    body: list[ast.stmt] = tree.body
    found: ast.ClassDef | None = None
    for part in qualname.split("."):
        found = next((s for s in body if isinstance(s, ast.ClassDef) and s.name == part), None)
        if found is None:
            return None
        body = found.body
    return found
