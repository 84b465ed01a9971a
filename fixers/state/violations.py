"""State-flow findings of one worker (``fixers.state.flow``) as violations a maintainer can act on.

A snapshot fix is proposed only when every save and restore sits in the class's own
implementation method (the codemod stashes right after the saves; one in a parent's method of
the same name, reached through ``super()``, is out of its reach); a pending-flag fix only when
the adjustment and its compensation happen in distinct, simple top-level statements of the
implementation (a helper call counts: the conditions inside it run again when the hook re-runs
it) and the compensating statement refers to nothing but ``self`` and the metadata parameters.
The flag is set after the adjusting statement and cleared after the compensating one, so the
hook does exactly what the success path would have done next. Anything else is reported with
the exact lines and what a human must decide.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from fixers.contracts.model import Contract
from fixers.state.flow import Fixup, Pair
from fixers.state.trace import MethodSource
from fixers.sweep.index import Member
from fixers.sweep.violation_types import Fix, Save, Violation


def _fields(pairs: Sequence[Pair]) -> str:
    return ", ".join(dict.fromkeys(f"{p.param}.{p.attr}" for p in pairs))


def _where(pairs: Sequence[Pair]) -> str:
    methods = sorted({change.method for pair in pairs for change in pair.changes})
    return ", ".join(methods)


def _snapshot(
    contract: Contract, member: Member, entry: MethodSource, pairs: Sequence[Pair]
) -> Violation:
    name = f"{member.facts.qualname}.{entry.func.name}"
    # The codemod edits this class's own method: a save or restore in a parent's method of the
    # same name (reached through ``super()``) is out of its reach.
    here = (entry.cls, entry.func.name)
    elsewhere = sorted(
        {
            f"{event.cls}.{event.method}"
            for p in pairs
            for event in (p.save, p.restore)
            if (event.cls, event.method) != here
        }
    )
    if elsewhere:
        detail = (
            f"{name} restores {_fields(pairs)} only on the success path, but they are saved or "
            f"restored in {', '.join(elsewhere)}: a human must decide where the snapshot is taken"
        )
        fix = None
    else:
        detail = (
            f"{name} saves {_fields(pairs)} and puts them back only on the success path "
            f"(changed in {_where(pairs)}); fix: snapshot them on self and restore them in "
            f"{contract.restore_hook}"
        )
        fix = "snapshot"
    saves: tuple[Save, ...] = tuple(
        (p.holder, p.param, p.attr, "tensor" if p.tensor else "value") for p in pairs
    )
    first = min(pairs, key=lambda p: p.save.line).save
    line = first.line if first.rel == member.rel else member.facts.lineno
    return Violation(
        "transient-state",
        contract.name,
        member.rel,
        line,
        member.qualname,
        detail,
        fix,
        entry.func.name,
        saves,
    )


def _free_names(stmt: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}


def _anchor(entry: MethodSource, at: int) -> ast.stmt | None:
    body = entry.func.body
    return body[at] if 0 <= at < len(body) else None


def _why_no_rewrite(
    entry: MethodSource, fixup: Fixup, params: tuple[str, ...]
) -> tuple[str, ast.stmt | None, ast.stmt | None]:
    adjust, compensate = (
        _anchor(entry, fixup.adjust.anchor),
        _anchor(entry, fixup.compensate.anchor),
    )
    simple = (ast.Expr, ast.AugAssign, ast.Assign)
    if adjust is None or compensate is None or adjust is compensate:
        return "the adjustment and its compensation happen inside one call", None, None
    if not isinstance(adjust, simple) or not isinstance(compensate, simple):
        return "the adjustment or its compensation sits inside a compound statement", None, None
    unknown = sorted(_free_names(compensate) - {"self", *params})
    if unknown:
        return (
            f"the compensation uses {', '.join(unknown)}, which the restore hook cannot see",
            None,
            None,
        )
    return "", adjust, compensate


def _pending(contract: Contract, member: Member, entry: MethodSource, fixup: Fixup) -> Violation:
    name = f"{member.facts.qualname}.{entry.func.name}"
    field = f"{fixup.param}.{fixup.attr}"
    lines = f"line {fixup.adjust.line} in {fixup.adjust.method}, undone at line " + (
        f"{fixup.compensate.line} in {fixup.compensate.method}"
    )
    why, adjust, compensate = _why_no_rewrite(entry, fixup, contract.metadata_params)
    flag = f"_{fixup.attr.lstrip('_')}_fixup_pending"
    line = fixup.adjust.line if fixup.adjust.rel == member.rel else member.facts.lineno
    start = f"{name} adjusts {field} in place ({lines}) only on the success path"
    if adjust is None or compensate is None:
        detail = (
            f"{start}; no safe rewrite: {why}. A human must decide how {contract.restore_hook} "
            "undoes it"
        )
        fix: Fix | None = None
        statements, flag = ("", ""), ""
    else:
        hook = contract.restore_hook
        detail = f"{start}; fix: a pending flag self.{flag} that {hook} checks to undo it"
        fix, statements = "pending-flag", (ast.unparse(adjust), ast.unparse(compensate))
    return Violation(
        "deferred-fixup",
        contract.name,
        member.rel,
        line,
        member.qualname,
        detail,
        fix,
        entry.func.name,
        fixup=statements,
        flag=flag,
    )


def state_violations(
    contract: Contract,
    member: Member,
    entry: MethodSource,
    pairs: Sequence[Pair],
    fixups: Sequence[Fixup],
) -> Iterator[Violation]:
    """One snapshot violation for all pairs of a class, one violation per deferred fix-up."""
    if pairs:
        yield _snapshot(contract, member, entry, pairs)
    for fixup in fixups:
        yield _pending(contract, member, entry, fixup)
