"""Editing a ``def``'s parameter list with LibCST as a learned migration says: parameters
added (appended in their kind's place, or inserted where the siblings put them), dropped,
re-defaulted, made keyword-only or reordered, with the commas in the original's style (a
black-style trailing comma and line break stay where they were)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from fixers.learned.signature_edit import Param


def _node(param: Param) -> cst.Param:
    text = param.annotation_text
    annotation = cst.Annotation(cst.parse_expression(text)) if text else None
    written = param.default_text
    default = cst.parse_expression(written) if written is not None else None
    return cst.Param(
        cst.Name(param.name),
        annotation=annotation,
        default=default,
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(" " if annotation else ""),
            whitespace_after=cst.SimpleWhitespace(" " if annotation else ""),
        )
        if default is not None
        else cst.MaybeSentinel.DEFAULT,
    )


def _elements(params: cst.Parameters) -> list[cst.CSTNode]:
    star = [params.star_arg] if isinstance(params.star_arg, cst.Param | cst.ParamStar) else []
    slash = [params.posonly_ind] if isinstance(params.posonly_ind, cst.ParamSlash) else []
    kwarg = [params.star_kwarg] if params.star_kwarg is not None else []
    return [
        *params.posonly_params, *slash, *params.params, *star, *params.kwonly_params, *kwarg
    ]  # fmt: skip


def _recomma(edited: cst.Parameters, original: cst.Parameters) -> cst.Parameters:
    """Commas in the original's style: every separator like its first, the last one as its last
    (a black-style trailing comma and line break stay where they were)."""
    before = _elements(original)
    if len(before) < 2:
        return edited
    inner = before[0].comma  # type: ignore[attr-defined]
    last = before[-1].comma  # type: ignore[attr-defined]
    after = _elements(edited)
    commas = {id(node): inner if i < len(after) - 1 else last for i, node in enumerate(after)}

    def put(node: cst.CSTNode) -> cst.CSTNode:
        return node.with_changes(comma=commas[id(node)])

    return edited.with_changes(
        posonly_params=[put(p) for p in edited.posonly_params],
        posonly_ind=put(edited.posonly_ind)
        if isinstance(edited.posonly_ind, cst.ParamSlash)
        else edited.posonly_ind,
        params=[put(p) for p in edited.params],
        star_arg=put(edited.star_arg)
        if isinstance(edited.star_arg, cst.Param | cst.ParamStar)
        else edited.star_arg,
        kwonly_params=[put(p) for p in edited.kwonly_params],
        star_kwarg=put(edited.star_kwarg) if edited.star_kwarg is not None else None,
    )


class NotLearnable(Exception):
    """The learned edit does not fit this method's parameters; the message says why."""


@dataclass
class _Lists:
    """A parameter list being edited, by kind (LibCST keeps each kind in its own field)."""

    posonly: list[cst.Param]
    positional: list[cst.Param]
    keyword_only: list[cst.Param]
    star_arg: cst.Param | cst.ParamStar | cst.MaybeSentinel
    star_kwarg: cst.Param | None


def _kept(params: cst.Parameters, removed: Sequence[str], changed: Sequence[Param]) -> _Lists:
    """``params`` without ``removed``, each of ``changed`` with its new default; one made
    keyword-only moves behind the ``*`` (any other change of kind cannot be learned here)."""
    drop = set(removed)
    wanted = {p.name: p for p in changed}
    moved: list[cst.Param] = []

    def keep(items: Sequence[cst.Param], kind: str) -> list[cst.Param]:
        out: list[cst.Param] = []
        for p in items:
            new = wanted.get(p.name.value)
            if p.name.value in drop:
                continue
            if new is None:
                out.append(p)
                continue
            node = _node(new)
            edited = p.with_changes(default=node.default, equal=node.equal)
            if new.kind == kind:
                out.append(edited)
            elif new.kind == "keyword-only" and kind != "keyword-only":
                moved.append(edited)
            else:
                raise NotLearnable(f"cannot make {p.name.value} ({kind}) {new.kind}")
        return out

    star_arg = params.star_arg
    if isinstance(star_arg, cst.Param) and star_arg.name.value in drop:
        star_arg = cst.MaybeSentinel.DEFAULT
    star_kwarg = params.star_kwarg
    if star_kwarg is not None and star_kwarg.name.value in drop:
        star_kwarg = None
    lists = _Lists(
        keep(params.posonly_params, "positional-only"),
        keep(params.params, "positional"),
        keep(params.kwonly_params, "keyword-only"),
        star_arg,
        star_kwarg,
    )
    if moved:
        if not isinstance(lists.star_arg, cst.Param | cst.ParamStar):
            lists.star_arg = cst.ParamStar()
        lists.keyword_only[:0] = moved
    return lists


def _reorder(lists: _Lists, order: Sequence[str]) -> None:
    """Put the positional parameters named in ``order`` in that order, in the slots they hold
    (or raise ``NotLearnable``: one is missing, or the order moves one across the ``/``)."""
    present = {p.name.value for p in (*lists.posonly, *lists.positional)}
    missing = [name for name in order if name not in present]
    if missing:
        raise NotLearnable(
            f"the siblings reordered ({', '.join(order)}); this override does not take "
            f"{', '.join(missing)} positionally"
        )
    per_list = [[name for name in order if name in {p.name.value for p in items}]
                for items in (lists.posonly, lists.positional)]  # fmt: skip
    if [*per_list[0], *per_list[1]] != list(order):
        raise NotLearnable(f"the order ({', '.join(order)}) moves a parameter across the /")
    for items, names in zip((lists.posonly, lists.positional), per_list, strict=True):
        slots = [i for i, p in enumerate(items) if p.name.value in names]
        nodes = {items[i].name.value: items[i] for i in slots}
        for slot, name in zip(slots, names, strict=True):
            items[slot] = nodes[name]


def _check_defaults(lists: _Lists) -> None:
    """A positional parameter without a default may not follow one with a default."""
    with_default = ""
    for p in (*lists.posonly, *lists.positional):
        if p.default is not None:
            with_default = with_default or p.name.value
        elif with_default:
            raise NotLearnable(
                f"{p.name.value} has no default but would follow {with_default}, which has one"
            )


def _add(lists: _Lists, param: Param) -> None:
    """Put ``param`` in its kind's place, or raise ``NotLearnable`` saying why it cannot go."""
    node = _node(param)
    if param.kind == "positional":
        positional, before = lists.positional, len(lists.posonly)
        at = len(positional) if param.position is None else param.position - before
        if not 0 <= at <= len(positional):
            raise NotLearnable(
                f"the siblings put {param.name} as positional parameter "
                f"{(param.position or 0) + 1}; this override has "
                f"{before + len(positional)} positional parameters"
            )
        if param.default is None and any(p.default is not None for p in positional[:at]):
            raise NotLearnable(f"{param.name} has no default but follows parameters that do")
        positional.insert(at, node)
    elif param.kind == "keyword-only":
        if not isinstance(lists.star_arg, cst.Param | cst.ParamStar):
            lists.star_arg = cst.ParamStar()
        lists.keyword_only.append(node)
    elif param.kind == "var-keyword" and lists.star_kwarg is None:
        lists.star_kwarg = node.with_changes(star="**")
    elif param.kind == "var-positional" and not isinstance(lists.star_arg, cst.Param):
        lists.star_arg = node.with_changes(star="*")
    else:
        raise NotLearnable(f"cannot add {param.source()} ({param.kind}) here")


def edit_parameters(
    params: cst.Parameters,
    added: Sequence[Param],
    removed: Sequence[str],
    changed: Sequence[Param],
    order: Sequence[str] = (),
) -> cst.Parameters:
    """``params`` with ``removed`` dropped, ``changed`` re-defaulted (or made keyword-only),
    the positional ones named in ``order`` put in that order, and ``added`` put in their kind's
    place: appended, or for a positional parameter with a ``position``, inserted at that index
    of the positional ones (``self`` is 0). Names already present are left as they are (a second
    run adds nothing). Raises ``NotLearnable`` when the result would not be a valid ``def``."""
    present = {
        p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
    }
    for extra in (params.star_arg, params.star_kwarg):
        if isinstance(extra, cst.Param):
            present.add(extra.name.value)
    lists = _kept(params, removed, changed)
    if order:
        _reorder(lists, order)
    for param in added:
        if param.name not in present:
            _add(lists, param)
    _check_defaults(lists)
    star_arg = lists.star_arg
    if isinstance(star_arg, cst.ParamStar) and not lists.keyword_only:
        star_arg = cst.MaybeSentinel.DEFAULT  # a bare * needs a keyword-only parameter after it
    edited = params.with_changes(
        posonly_params=lists.posonly,
        posonly_ind=params.posonly_ind if lists.posonly else cst.MaybeSentinel.DEFAULT,
        params=lists.positional,
        kwonly_params=lists.keyword_only,
        star_arg=star_arg,
        star_kwarg=lists.star_kwarg,
    )
    return _recomma(edited, params)
