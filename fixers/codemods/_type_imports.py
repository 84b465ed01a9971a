"""Annotation-only imports a generated method needs, added under ``if TYPE_CHECKING:`` (an
existing block is reused; ``TYPE_CHECKING`` itself imported when the module lacks it), so that
nothing new runs when the module is imported."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
import libcst.matchers as m

from fixers.codemods.snapshot_text import type_checking_block, type_checking_imports

_IMPORT = m.SimpleStatementLine(body=[m.Import() | m.ImportFrom()])
_TYPE_CHECKING_IF = m.If(test=m.Name("TYPE_CHECKING") | m.Attribute(attr=m.Name("TYPE_CHECKING")))


def parse_imports(specs: Sequence[str]) -> list[tuple[str, str]]:
    """``module:Name`` (``from module import Name``) or ``module:`` (``import module``)."""
    return [(module, name) for module, _, name in (spec.partition(":") for spec in specs)]


def with_type_checking_imports(
    module: cst.Module, imports: Sequence[tuple[str, str]], indent: str
) -> cst.Module:
    """``module`` with ``imports`` under its ``if TYPE_CHECKING:`` block (made when absent)."""
    if not imports:
        return module
    body = list(module.body)
    existing = next((i for i, s in enumerate(body) if m.matches(s, _TYPE_CHECKING_IF)), None)
    if existing is not None:
        block = body[existing]
        assert isinstance(block, cst.If) and isinstance(block.body, cst.IndentedBlock)
        added = cst.parse_module(
            type_checking_imports(list(imports), ""), config=module.config_for_parsing
        ).body
        new_block = block.body.with_changes(body=[*block.body.body, *added])
        body[existing] = block.with_changes(body=new_block)
        return module.with_changes(body=body)
    at = max((i + 1 for i, s in enumerate(body) if m.matches(s, _IMPORT)), default=0)
    has_flag = "TYPE_CHECKING" in module.code
    text = type_checking_block(list(imports), not has_flag, indent)
    new = list(cst.parse_module(text, config=module.config_for_parsing).body)
    return module.with_changes(body=[*body[:at], *new, *body[at:]])
