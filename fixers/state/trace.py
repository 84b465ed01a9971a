"""One worker call as a sequence of state events: the input of the state-flow model.

The implementation method is walked in source order; a call on ``self`` (or ``super()``) to a
method the repository defines is followed into that method (through the class's repository
MRO, the base included), with the callee's parameters bound to the metadata objects the caller
passed. What comes out is a flat list of events on metadata fields (``attn_metadata.x``):

* ``save``: the field's value captured into a local or onto ``self`` (a tensor ``.clone()``
  counts as a tensor save);
* ``restore``: a saved value written back (``x.attr = saved`` or ``x.attr.copy_(saved)``);
* ``mutate``: any other write: assignment, augmented assignment, an in-place tensor method
  (``fill_``, ``copy_``, ``add_``, ...), directly or through a local alias of the field;
* ``call``: any other call, a point where the call may fail;
* ``open`` / ``close``: the repository's own save/restore bracket (``prepare_for_spec_dec`` /
  ``restore_from_spec_dec`` on the metadata, or the worker's ``_prepare_attn_metadata_for_spec_dec``
  / ``_restore_attn_metadata_from_spec_dec``); ``open`` carries the fields the bracket saves, read
  from the repository's code, or ``None`` when that cannot be read (the whole region is covered).

Pure functions over ``ast``; ``fixers.state.flow`` turns events into findings.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Literal

from fixers.state.bracket import BracketReader
from fixers.state.sources import (
    MAX_DEPTH,
    PREPARE_CALLS,
    RESTORE_CALLS,
    ClassSource,
    Frame,
    MethodSource,
    Mro,
    calls_in,
    constant_fields,
    field_of,
    find_class,
    holder_of,
    lazy_fields,
    saved_value,
    self_call,
)

__all__ = ["ClassSource", "Event", "MethodSource", "Tracer", "find_class"]

EventKind = Literal["save", "restore", "mutate", "open", "close", "call"]


@dataclass(frozen=True)
class Event:
    """One thing a call does to a metadata field (or to the bracket)."""

    kind: EventKind
    rel: str
    cls: str
    method: str
    line: int
    param: str = ""
    attr: str = ""
    holder: str = ""
    tensor: bool = False
    in_finally: bool = False
    conditional: bool = False
    lazy: bool = False  # written only when empty: a cache kept across calls
    fields: frozenset[str] | None = None
    op: str = ""
    amount: str = ""
    index: str = ""
    value: ast.expr | None = None
    anchor: int = -1  # position of the entry method's top-level statement this came from
    chain: tuple[str, ...] = ()  # methods followed to reach this event, entry first
    arms: tuple[tuple[int, int], ...] = ()  # the ``if``/``match`` arms it runs under

    def excludes(self, other: Event) -> bool:
        """Whether the two never happen in one call: they sit in different arms of one branch."""
        mine = dict(self.arms)
        return any(node in mine and mine[node] != arm for node, arm in other.arms)


class Tracer:
    """Builds the event list of one entry method over a repository MRO."""

    def __init__(self, mro: list[ClassSource], params: tuple[str, ...]) -> None:
        self.mro = Mro(tuple(mro))
        self.params = params
        self.events: list[Event] = []
        self._active: set[tuple[str, str]] = set()
        self._saved_on_self: dict[str, tuple[str, str]] = {}

    def _was_saved(self, holder: str | None, param: str, attr: str, frame: Frame) -> bool:
        """Whether ``holder`` holds a value saved earlier from ``param.attr``."""
        if holder is None:
            return False
        where = self._saved_on_self if holder.startswith("self.") else frame.saved
        return where.get(holder) == (param, attr)

    def _forget(self, holder: str, frame: Frame) -> None:
        where = self._saved_on_self if holder.startswith("self.") else frame.saved
        where.pop(holder, None)

    def _remember(self, holder: str, param: str, attr: str, frame: Frame) -> None:
        where = self._saved_on_self if holder.startswith("self.") else frame.saved
        where[holder] = (param, attr)

    # ---- entry ----------------------------------------------------------------------------
    def trace(self, method: str) -> list[Event]:
        """Events of one call of ``method`` on the first MRO class, in execution order."""
        found = self.mro.resolve(method, 0)
        if found is None:
            return []
        source, at = found
        own = {a.arg for a in [*source.func.args.posonlyargs, *source.func.args.args]}
        own |= {a.arg for a in source.func.args.kwonlyargs}
        binding = {p: p for p in self.params if p in own}
        frame = Frame(source, at, binding, chain=(source.func.name,))
        for position, stmt in enumerate(source.func.body):
            frame.anchor = position
            self._stmt(stmt, frame)
        return self.events

    # ---- statements -----------------------------------------------------------------------
    def _block(
        self,
        body: list[ast.stmt],
        frame: Frame,
        lazy: frozenset[tuple[str, str]] = frozenset(),
        arm: tuple[int, int] | None = None,
        **changes: bool,
    ) -> None:
        saved = (frame.in_finally, frame.conditional, frame.lazy, frame.arms)
        frame.in_finally = changes.get("in_finally", frame.in_finally)
        frame.conditional = changes.get("conditional", frame.conditional)
        frame.lazy = frame.lazy | lazy
        frame.arms = frame.arms if arm is None else (*frame.arms, arm)
        for stmt in body:
            self._stmt(stmt, frame)
        frame.in_finally, frame.conditional, frame.lazy, frame.arms = saved

    def _stmt(self, stmt: ast.stmt, frame: Frame) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return
        if isinstance(stmt, ast.If | ast.While):
            self._expr_calls(stmt.test, frame)
            # A loop's body and else may both run; an ``if``'s two arms never do.
            arms = ((id(stmt), 0), (id(stmt), 1)) if isinstance(stmt, ast.If) else (None, None)
            start = len(self.events)
            test_lazy = lazy_fields(stmt.test, frame)
            self._block(stmt.body, frame, test_lazy, arm=arms[0], conditional=True)
            middle = len(self.events)
            self._block(stmt.orelse, frame, arm=arms[1], conditional=True)
            self._merge_branch_brackets(start, middle)
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            self._expr_calls(stmt.iter, frame)
            self._block(stmt.body, frame, conditional=True)
            self._block(stmt.orelse, frame, conditional=True)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            for item in stmt.items:
                self._expr_calls(item.context_expr, frame)
            self._block(stmt.body, frame)
        elif isinstance(stmt, ast.Try | ast.TryStar):
            self._block(stmt.body, frame)
            for handler in stmt.handlers:
                self._block(handler.body, frame, conditional=True)
            self._block(stmt.orelse, frame)
            self._block(stmt.finalbody, frame, in_finally=True)
        elif isinstance(stmt, ast.Match):
            self._expr_calls(stmt.subject, frame)
            for number, case in enumerate(stmt.cases):
                self._block(case.body, frame, arm=(id(stmt), number), conditional=True)
        else:
            self._expr_calls(stmt, frame)
            self._effects(stmt, frame)

    def _merge_branch_brackets(self, start: int, middle: int) -> None:
        """A bracket opened in both branches of an ``if`` saves what both save; one opened in a
        single branch may not have run, so it counts as saving nothing."""
        body = [i for i in range(start, middle) if self.events[i].kind == "open"]
        orelse = [i for i in range(middle, len(self.events)) if self.events[i].kind == "open"]
        if not body and not orelse:
            return
        if len(body) == 1 and len(orelse) == 1:
            first, second = self.events[body[0]], self.events[orelse[0]]
            fields = _both(first.fields, second.fields)
            self.events[body[0]] = replace(first, fields=fields)
            del self.events[orelse[0]]
            return
        for i in [*body, *orelse]:
            self.events[i] = replace(self.events[i], fields=frozenset())

    def _emit(self, frame: Frame, node: ast.AST, kind: EventKind, **values: object) -> None:
        lazy = (values.get("param"), values.get("attr")) in frame.lazy
        self.events.append(
            Event(
                kind,
                frame.source.rel,
                frame.source.cls,
                frame.source.func.name,
                getattr(node, "lineno", frame.source.func.lineno),
                in_finally=frame.in_finally,
                conditional=frame.conditional,
                lazy=lazy,
                anchor=frame.anchor,
                chain=frame.chain,
                arms=frame.arms,
                **values,  # type: ignore[arg-type]
            )
        )

    # ---- calls ----------------------------------------------------------------------------
    def _expr_calls(self, node: ast.AST, frame: Frame) -> None:
        for call in calls_in(node):
            if not _is_field_method(call, frame):
                self._emit(frame, call, "call")  # a point where the call may fail
            self._call(call, frame)

    def _call(self, call: ast.Call, frame: Frame) -> None:
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in frame.binding
            and func.attr in PREPARE_CALLS | RESTORE_CALLS
        ):
            self._bracket_call(call, frame, fields=constant_fields(call))
            return
        target = self_call(call)
        if target is not None:
            self._method_call(call, target, frame)
            return
        if isinstance(func, ast.Attribute):
            self._inplace_call(call, func, frame)

    def _bracket_call(self, call: ast.Call, frame: Frame, fields: frozenset[str] | None) -> None:
        assert isinstance(call.func, ast.Attribute)
        if call.func.attr in PREPARE_CALLS:
            self._emit(frame, call, "open", fields=fields)
        else:
            self._emit(frame, call, "close")

    def _method_call(self, call: ast.Call, target: tuple[str, bool], frame: Frame) -> None:
        name, via_super = target
        found = self.mro.resolve(name, frame.mro_at + 1 if via_super else 0)
        if name in PREPARE_CALLS:
            fields = None
            if found is not None:
                fields = BracketReader(self.mro).fields(
                    found[0], found[1], self.mro.bind(found[0], call, frame)
                )
            self._emit(frame, call, "open", fields=fields)
            return
        if name in RESTORE_CALLS:
            self._emit(frame, call, "close")
            return
        if found is None:
            return
        callee, at = found
        key = (callee.cls, callee.func.name)
        if key in self._active or len(frame.chain) >= MAX_DEPTH:
            return
        binding = self.mro.bind(callee, call, frame)
        if not binding:
            return
        inner = Frame(
            callee,
            at,
            binding,
            in_finally=frame.in_finally,
            conditional=frame.conditional,
            anchor=frame.anchor,
            chain=(*frame.chain, callee.func.name),
            arms=frame.arms,
        )
        self._active.add(key)
        try:
            self._block(callee.func.body, inner)
        finally:
            self._active.discard(key)

    def _inplace_call(self, call: ast.Call, func: ast.Attribute, frame: Frame) -> None:
        name = func.attr
        if not name.endswith("_") or name.startswith("_"):
            return
        found = field_of(func.value, frame)
        if found is None:
            return
        param, attr, index = found
        if name == "copy_" and len(call.args) == 1:
            holder = holder_of(call.args[0])
            if holder is not None and not index and self._was_saved(holder, param, attr, frame):
                self._emit(
                    frame, call, "restore", param=param, attr=attr, holder=holder, tensor=True
                )
                return
        op = {"add_": "+", "sub_": "-"}.get(name, "inplace")
        amount = ast.unparse(call.args[0]) if op != "inplace" and call.args else ""
        self._emit(frame, call, "mutate", param=param, attr=attr, op=op, amount=amount, index=index)

    # ---- statement effects ----------------------------------------------------------------
    def _effects(self, stmt: ast.stmt, frame: Frame) -> None:
        if isinstance(stmt, ast.AugAssign):
            found = field_of(stmt.target, frame)
            if found is not None:
                op = {ast.Add: "+", ast.Sub: "-"}.get(type(stmt.op), "aug")
                self._emit(
                    frame,
                    stmt,
                    "mutate",
                    param=found[0],
                    attr=found[1],
                    op=op,
                    amount=ast.unparse(stmt.value),
                    index=found[2],
                )
            return
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self._assign(stmt, [stmt.target], stmt.value, frame)
        elif isinstance(stmt, ast.Assign):
            self._assign(stmt, stmt.targets, stmt.value, frame)

    def _assign(
        self, stmt: ast.stmt, targets: list[ast.expr], value: ast.expr, frame: Frame
    ) -> None:
        for target in targets:
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                for sub_target, sub_value in zip(target.elts, value.elts, strict=False):
                    self._assign_one(stmt, sub_target, sub_value, frame)
            else:
                self._assign_one(stmt, target, value, frame)

    def _assign_one(self, stmt: ast.stmt, target: ast.expr, value: ast.expr, frame: Frame) -> None:
        written = None if isinstance(target, ast.Name) else field_of(target, frame)
        if written is not None:
            param, attr, index = written
            holder = holder_of(value)
            restores = (
                not index
                and not isinstance(target, ast.Name)
                and self._was_saved(holder, param, attr, frame)
            )
            self._emit(
                frame,
                stmt,
                "restore" if restores else "mutate",
                param=param,
                attr=attr,
                holder=holder if restores and holder else "",
                op="=",
                index=index,
                value=value,
            )
            return
        saved = saved_value(value, frame)
        holder = holder_of(target)
        if holder is not None:
            self._forget(holder, frame)  # a holder given a new value no longer holds a save
        if saved is not None and holder is not None:
            self._remember(holder, saved[0], saved[1], frame)
            self._emit(
                frame,
                stmt,
                "save",
                param=saved[0],
                attr=saved[1],
                holder=holder,
                tensor=saved[2],
            )
        if isinstance(target, ast.Name):
            alias = field_of(value, frame) if not isinstance(value, ast.Call) else None
            frame.aliases.pop(target.id, None)
            frame.binding.pop(target.id, None)
            if alias is not None:
                frame.aliases[target.id] = (alias[0], alias[1])


def _is_field_method(call: ast.Call, frame: Frame) -> bool:
    """``m.f.fill_(0)``-style calls: a change to the field, not a step that may fail."""
    func = call.func
    return isinstance(func, ast.Attribute) and field_of(func.value, frame) is not None


def _both(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    """Fields saved on both paths (``None``: unknown, the whole region)."""
    if a is None:
        return b
    if b is None:
        return a
    return a & b
