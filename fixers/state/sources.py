"""The pieces of the state-flow walk that need no walker: the MRO's class and method sources,
the walk's frame, and pure readers of ``ast`` nodes (which field a node names, which call is a
call on ``self``)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

PREPARE_CALLS = frozenset({"prepare_for_spec_dec", "_prepare_attn_metadata_for_spec_dec"})
MAX_DEPTH = 8  # calls followed into helpers, and super() steps of a prepare helper
RESTORE_CALLS = frozenset({"restore_from_spec_dec", "_restore_attn_metadata_from_spec_dec"})


@dataclass(frozen=True)
class MethodSource:
    """One method of a class in the repository MRO, with where it lives."""

    cls: str
    rel: str
    func: ast.FunctionDef | ast.AsyncFunctionDef

    @property
    def is_static(self) -> bool:
        """Declared ``@staticmethod`` (its first parameter is not ``self``)."""
        return any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in self.func.decorator_list
        )


@dataclass(frozen=True)
class ClassSource:
    """A class statement of the repository MRO."""

    qualname: str
    rel: str
    node: ast.ClassDef

    def method(self, name: str) -> MethodSource | None:
        """The method ``name`` defined in this class body, if any."""
        for stmt in self.node.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
                return MethodSource(self.qualname, self.rel, stmt)
        return None


@dataclass
class Frame:
    source: MethodSource
    mro_at: int
    binding: dict[str, str]  # local name -> contract metadata parameter
    aliases: dict[str, tuple[str, str]] = field(default_factory=dict)
    saved: dict[str, tuple[str, str]] = field(default_factory=dict)  # local holder -> field
    in_finally: bool = False
    conditional: bool = False
    lazy: frozenset[tuple[str, str]] = frozenset()  # fields filled under ``if <field> is None``
    anchor: int = -1
    chain: tuple[str, ...] = ()
    arms: tuple[tuple[int, int], ...] = ()  # (branching statement, arm) this code runs under


def field_of(node: ast.expr, frame: Frame) -> tuple[str, str, str] | None:
    """``(param, attr, index)`` for ``p.attr``, ``p.attr[i]`` or an alias of a field."""
    index = ""
    while isinstance(node, ast.Subscript):
        index = ast.unparse(node.slice)
        node = node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        param = frame.binding.get(node.value.id)
        if param is not None:
            return param, node.attr, index
    if isinstance(node, ast.Name) and node.id in frame.aliases:
        param, attr = frame.aliases[node.id]
        return param, attr, index
    return None


def plain_field(node: ast.expr, frame: Frame) -> tuple[str, str] | None:
    """``(param, attr)`` for exactly ``p.attr`` (no subscript, no alias)."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in frame.binding
    ):
        return frame.binding[node.value.id], node.attr
    return None


def saved_value(node: ast.expr, frame: Frame) -> tuple[str, str, bool] | None:
    """``p.attr`` (value) or ``p.attr.clone()`` (tensor) as ``(param, attr, tensor)``."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "clone"
        and not node.args
    ):
        found = plain_field(node.func.value, frame)
        return (found[0], found[1], True) if found else None
    found = plain_field(node, frame)
    return (found[0], found[1], False) if found else None


def holder_of(node: ast.expr) -> str | None:
    """Where a saved value can live: a local name or ``self.attr``."""
    if isinstance(node, ast.Name):
        return node.id
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return ast.unparse(node)
    return None


def self_call(node: ast.Call) -> tuple[str, bool] | None:
    """``("m", via_super)`` for ``self.m(...)`` / ``super().m(...)``."""
    func = node.func
    if not isinstance(func, ast.Attribute):
        return None
    if isinstance(func.value, ast.Name) and func.value.id == "self":
        return func.attr, False
    if (
        isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
    ):
        return func.attr, True
    return None


def calls_in(node: ast.AST) -> list[ast.Call]:
    """Calls inside one statement's own expressions (not in nested blocks), in source order."""
    found: list[ast.Call] = []
    stack: list[ast.AST] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Call):
            found.append(current)
        if isinstance(current, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(current))))
    return sorted(found, key=lambda c: (c.lineno, c.col_offset))


def constant_fields(call: ast.Call) -> frozenset[str] | None:
    """String-constant arguments of ``prepare_for_spec_dec("a", "b")``; None if not all are."""
    names: set[str] = set()
    for arg in call.args:
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            return None
        names.add(arg.value)
    return frozenset(names)


def unslice_clone(node: ast.expr) -> ast.expr:
    """``p.attr[:n].clone()`` read as ``p.attr.clone()`` (a prepare helper saving a prefix)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "clone"
        and isinstance(node.func.value, ast.Subscript)
    ):
        inner: ast.expr = node.func.value
        while isinstance(inner, ast.Subscript):
            inner = inner.value
        return ast.Call(ast.Attribute(inner, "clone", ast.Load()), [], [])
    return node


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


def lazy_fields(test: ast.expr, frame: Frame) -> frozenset[tuple[str, str]]:
    """Fields an ``if`` fills only when empty: ``if m.f is None`` / ``if x is None`` where ``x``
    holds ``m.f`` / ``if not m.f`` (a cache kept across calls)."""
    subject: ast.expr | None = None
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        subject = test.left
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        subject = test.operand
    if subject is None:
        return frozenset()
    if isinstance(subject, ast.Name) and subject.id in frame.saved:
        return frozenset({frame.saved[subject.id]})
    found = field_of(subject, frame)
    return frozenset({found[:2]}) if found else frozenset()


@dataclass(frozen=True)
class Mro:
    """A class's repository MRO (the class first, the base last when it is in the repository)."""

    classes: tuple[ClassSource, ...]

    def resolve(self, name: str, start: int) -> tuple[MethodSource, int] | None:
        """The first definition of ``name`` from position ``start``, with its position."""
        for at in range(start, len(self.classes)):
            found = self.classes[at].method(name)
            if found is not None:
                return found, at
        return None

    @staticmethod
    def bind(callee: MethodSource, call: ast.Call, frame: Frame) -> dict[str, str]:
        """The callee's parameters that receive metadata objects, by position or keyword."""
        args = callee.func.args
        positional = [a.arg for a in [*args.posonlyargs, *args.args]]
        if not callee.is_static:
            positional = positional[1:]
        names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
        binding: dict[str, str] = {}
        for name, arg in zip(positional, call.args, strict=False):
            if isinstance(arg, ast.Name) and arg.id in frame.binding:
                binding[name] = frame.binding[arg.id]
        for keyword in call.keywords:
            value = keyword.value
            if keyword.arg in names and isinstance(value, ast.Name) and value.id in frame.binding:
                binding[keyword.arg] = frame.binding[value.id]
        return binding
