"""What a learned signature edit leaves to a human in the method's body (bodies are never
learned): a new parameter the siblings' bodies use and this body does not, and a ``super()``
call that does not pass a new argument on. Pure functions over ``ast``."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

from fixers.learned.signature_edit import Function, names_read


def _super_calls(function: Function, method: str) -> list[ast.Call]:
    return [
        call
        for call in ast.walk(function)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == method
        and isinstance(call.func.value, ast.Call)
        and isinstance(call.func.value.func, ast.Name)
        and call.func.value.func.id == "super"
    ]


def not_passed_to_super(function: Function, method: str, added: Sequence[str]) -> list[str]:
    """The ``added`` names a ``super().method(...)`` call in ``function`` does not pass on (none
    when it passes ``**kwargs``, or there is no such call)."""
    for call in _super_calls(function, method):
        if any(k.arg is None for k in call.keywords):
            continue
        passed = {n.id for n in ast.walk(call) if isinstance(n, ast.Name)}
        passed |= {k.arg for k in call.keywords if k.arg is not None}
        dropped = [name for name in added if name not in passed]
        if dropped:
            return dropped
    return []


def body_caveat(
    function: Function, method: str, added: Sequence[str], uses: Mapping[str, int], examples: int
) -> str:
    """``; note: …`` for what the body of the migrated ``function`` (defined as ``method``)
    may still need, or "". ``uses``: how many of the ``examples`` siblings' bodies use each
    added parameter."""
    used_here = names_read(function)
    notes = [
        f"the siblings' bodies use {name} ({uses[name]} of {examples}), its body does not"
        for name in added
        if uses.get(name) and name not in used_here
    ]
    dropped = not_passed_to_super(function, method, added)
    if dropped:
        notes.append(f"its super().{method}(...) call does not pass {', '.join(dropped)} on")
    if not notes:
        return ""
    return f"; note: {'; '.join(notes)} (bodies are not learned: check whether it should)"
