"""One sibling's migration of one method, as data: a rename, parameters added, removed or changed.

Read from the ``ast`` trees of a class before and after a commit (LibCST only writes: the
examples are read, and ``ast`` reads the hundreds of files a contract commit touches about ten
times faster), with names and source text only (no positions), so edits of differently named
classes compare equal when they did the same thing: the "generalised over names" step of
anti-unification.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

ParamKind = Literal[
    "positional-only", "positional", "var-positional", "keyword-only", "var-keyword"
]


@dataclass(frozen=True)
class Param:
    """A parameter: its name, kind, default and annotation (source text; None when absent)."""

    name: str
    kind: ParamKind
    default: str | None = None
    annotation: str | None = None
    # Where an added positional parameter went when it went before existing ones: its index
    # among the positional parameters after the edit (``self`` is 0). None: appended.
    position: int | None = None
    # The default and annotation as the sibling wrote them (``"x"``, not ``ast``'s ``'x'``):
    # what is written; ``default``/``annotation`` are what siblings are compared on.
    written_default: str | None = field(default=None, compare=False)
    written_annotation: str | None = field(default=None, compare=False)

    @property
    def default_text(self) -> str | None:
        """The default as it is to be written."""
        return self.written_default or self.default

    @property
    def annotation_text(self) -> str | None:
        """The annotation as it is to be written."""
        return self.written_annotation or self.annotation

    def source(self) -> str:
        """How it reads in a ``def`` (``sink: Sink | None = None``; ``**kwargs``)."""
        star = {"var-positional": "*", "var-keyword": "**"}.get(self.kind, "")
        annotation, default = self.annotation_text, self.default_text
        annotated = f"{star}{self.name}" + (f": {annotation}" if annotation else "")
        if default is None:
            return annotated
        return annotated + (" = " if annotation else "=") + default


@dataclass(frozen=True)
class MethodEdit:
    """What one commit did to one method of one class.

    ``old_name`` is None for a method the commit added, ``new_name`` None for one it removed;
    equal names mean the method kept its name. ``body_changed`` says whether the statements
    inside changed (the signature aside).
    """

    old_name: str | None
    new_name: str | None
    added: tuple[Param, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[Param, ...] = ()
    body_changed: bool = False
    # A rename that kept the old name as a (deprecated) wrapper: the sibling's own API
    # decision, shown as evidence, not part of what siblings must agree on.
    old_kept: bool = False
    # The kept positional parameters in their new order, when the commit reordered them (every
    # positional caller's arguments move with them); empty when their order stayed.
    order: tuple[str, ...] = ()
    # The added parameters the new body reads: evidence for the note on a body that does not.
    used: tuple[str, ...] = ()

    @property
    def signature_key(self) -> tuple[object, ...]:
        """What siblings must agree on for a rule to be learned (annotations aside)."""
        return (
            self.old_name,
            self.new_name,
            tuple((p.name, p.kind, p.default, p.position) for p in self.added),
            self.removed,
            tuple((p.name, p.kind, p.default) for p in self.changed),
            self.order,
        )

    def describe(self) -> str:
        """In words: ``rename export -> emit, add *, sink=None``."""
        parts: list[str] = []
        if self.old_name is None:
            parts.append(f"add method {self.new_name}")
        elif self.new_name is None:
            parts.append(f"remove method {self.old_name}")
        elif self.old_name != self.new_name:
            parts.append(f"rename {self.old_name} -> {self.new_name}")
        if self.added:
            parts.append("add " + ", ".join(_shown(p) for p in self.added))
        if self.removed:
            parts.append("drop " + ", ".join(self.removed))
        if self.changed:
            parts += [f"{p.name} becomes {_shown(p)}" for p in self.changed]
        if self.order:
            parts.append(f"reorder to ({', '.join(self.order)})")
        return ", ".join(parts) or "no signature change"


ORDINALS = ("first", "second", "third", "fourth", "fifth")


def _shown(param: Param) -> str:
    where = ""
    if param.position:  # an index among the positional parameters, ``self`` being 0
        nth = param.position
        ordinal = ORDINALS[nth - 1] if nth <= len(ORDINALS) else f"{nth}th"
        where = f" as the {ordinal} parameter after self"
    return ("*, " if param.kind == "keyword-only" else "") + param.source() + where


def code_of(node: ast.AST | None) -> str | None:
    """The source text of ``node`` as ``ast.unparse`` writes it (None for None)."""
    return None if node is None else ast.unparse(node)


Function = ast.FunctionDef | ast.AsyncFunctionDef


Lines = Sequence[bytes]  # a file's lines with their endings, split once per file


def segment(lines: Lines, node: ast.expr) -> str | None:
    """The text of ``node`` as written in ``lines`` (``ast.get_source_segment`` splits the whole
    file on every call; the examples ask for hundreds of segments per commit)."""
    end_line, end_col = node.end_lineno, node.end_col_offset
    if end_line is None or end_col is None or end_line > len(lines):
        return None
    if node.lineno == end_line:
        text = lines[node.lineno - 1][node.col_offset : end_col]
    else:
        first, last = lines[node.lineno - 1][node.col_offset :], lines[end_line - 1][:end_col]
        text = b"".join([first, *lines[node.lineno : end_line - 1], last])
    return text.decode("utf-8", "replace")


def params_of(function: Function, source: Lines | None = None) -> tuple[Param, ...]:
    """Every parameter of ``function`` in order, ``self``/``cls`` included (with ``source``,
    the lines ``function`` was parsed from, each default and annotation as written there)."""
    a = function.args

    def param(arg: ast.arg, kind: ParamKind, default: ast.expr | None = None) -> Param:
        def written(node: ast.expr | None) -> str | None:
            return segment(source, node) if source and node else None

        return Param(
            arg.arg, kind, code_of(default), code_of(arg.annotation),
            written_default=written(default), written_annotation=written(arg.annotation),
        )  # fmt: skip

    out: list[Param] = []
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(
        a.defaults
    )
    for i, arg in enumerate(positional):
        out.append(param(arg, "positional-only" if i < len(a.posonlyargs) else "positional",
                         defaults[i]))  # fmt: skip
    if a.vararg is not None:
        out.append(param(a.vararg, "var-positional"))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out.append(param(arg, "keyword-only", default))
    if a.kwarg is not None:
        out.append(param(a.kwarg, "var-keyword"))
    return tuple(out)


def params_source(params: tuple[Param, ...]) -> str:
    """A parameter list as it reads in a ``def`` (PEP 8 spacing), with its ``/`` and ``*``."""
    out: list[str] = []
    starred = any(p.kind == "var-positional" for p in params)
    for i, param in enumerate(params):
        if param.kind == "keyword-only" and not starred:
            out.append("*")
            starred = True
        out.append(param.source())
        following = params[i + 1].kind if i + 1 < len(params) else None
        if param.kind == "positional-only" and following != "positional-only":
            out.append("/")
    return ", ".join(out)


def _body_code(function: Function) -> str:
    return ast.dump(ast.Module(body=function.body, type_ignores=[]))


def method_edit(
    old: Function | None, new: Function | None, source: Lines | None = None
) -> MethodEdit:
    """The edit that turns ``old`` into ``new`` (either may be None: added or removed);
    ``source``: the lines ``new`` was parsed from (defaults are written as there)."""
    if old is None or new is None:
        return MethodEdit(
            old.name if old is not None else None,
            new.name if new is not None else None,
        )
    old_params, new_params = params_of(old), params_of(new, source)
    before = {p.name: p for p in old_params}
    after = {p.name: p for p in new_params}
    added = _placed(new_params, set(before))
    read = names_read(new) if added else set()
    return MethodEdit(
        old.name,
        new.name,
        added=added,
        removed=tuple(name for name in before if name not in after),
        changed=tuple(
            p
            for name, p in after.items()
            if name in before and (before[name].kind, before[name].default) != (p.kind, p.default)
        ),
        body_changed=_body_code(old) != _body_code(new),
        order=reordered(old_params, new_params),
        used=tuple(p.name for p in added if p.name in read),
    )


def names_read(function: Function) -> set[str]:
    """The bare names the body of ``function`` reads (a parameter it uses)."""
    return {
        n.id
        for stmt in function.body
        for n in ast.walk(stmt)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }


POSITIONAL_KINDS = ("positional-only", "positional")


def reordered(before: tuple[Param, ...], after: tuple[Param, ...]) -> tuple[str, ...]:
    """The parameters positional on both sides in their order after, when it differs from
    their order before; empty when it does not."""
    kept = {p.name for p in before if p.kind in POSITIONAL_KINDS} & {
        p.name for p in after if p.kind in POSITIONAL_KINDS
    }
    old = tuple(p.name for p in before if p.name in kept)
    new = tuple(p.name for p in after if p.name in kept)
    return new if new != old else ()


def _placed(after: tuple[Param, ...], kept: set[str]) -> tuple[Param, ...]:
    """The parameters of ``after`` not in ``kept``; a positional one that went before a kept
    positional parameter carries its index (every later argument of a caller moves with it, so
    it must be inserted there, never appended)."""
    positional = [p for p in after if p.kind in POSITIONAL_KINDS]
    last_kept = max((i for i, p in enumerate(positional) if p.name in kept), default=-1)
    where = {p.name: i for i, p in enumerate(positional) if i < last_kept}
    return tuple(replace(p, position=where.get(p.name)) for p in after if p.name not in kept)


def class_methods(node: ast.ClassDef) -> dict[str, Function]:
    """The methods defined directly in a class body, by name (the last one wins, as in Python)."""
    return {s.name: s for s in node.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}


def class_edits(
    before: ast.ClassDef, after: ast.ClassDef, focus: str, source: Lines | None = None
) -> list[MethodEdit]:
    """The edits of a class that concern method ``focus`` (its name after the commit);
    ``source``: the lines ``after`` was parsed from.

    A method ``focus`` that appeared is a rename when exactly one method disappeared, or when
    one of several that did has the same body; or, when none disappeared, when exactly one
    method that stayed had ``focus``'s body before and another after (the old name kept as a
    wrapper). Otherwise it is a new method. A method ``focus`` present on both sides gives its
    parameter changes, if any.
    """
    old_methods, new_methods = class_methods(before), class_methods(after)
    target = new_methods.get(focus)
    if target is None:
        return []
    if focus in old_methods:
        edit = method_edit(old_methods[focus], target, source)
        has_change = edit.added or edit.removed or edit.changed or edit.order
        return [edit] if has_change else []
    gone = [old_methods[name] for name in old_methods if name not in new_methods]
    if len(gone) > 1:
        same_body = [f for f in gone if _body_code(f) == _body_code(target)]
        gone = same_body if len(same_body) == 1 else []
    if gone:
        return [method_edit(gone[0], target, source)]
    wrapped = [
        old_methods[name]
        for name in old_methods
        if name in new_methods
        and _body_code(old_methods[name]) == _body_code(target)
        and _body_code(new_methods[name]) != _body_code(target)
    ]
    if len(wrapped) == 1:
        return [replace(method_edit(wrapped[0], target, source), old_kept=True)]
    return [method_edit(None, target)]
