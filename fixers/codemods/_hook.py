"""Shared by the codemods that add a restore-hook override: typed parameters, state initialised
in ``__init__``, and annotation-only imports under ``if TYPE_CHECKING:`` (an existing block is
reused)."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
import libcst.matchers as m
from libcst.codemod import CodemodContext

from fixers.codemods._common import (
    DEFAULT_LINE_LENGTH,
    ClassTargetCommand,
    class_body,
    method_defs,
    parse_method,
    split_names,
    with_body,
)
from fixers.codemods._type_imports import parse_imports, with_type_checking_imports
from fixers.codemods.snapshot_text import init_text

_SUPER_INIT = m.SimpleStatementLine(
    body=[
        m.Expr(
            m.Call(func=m.Attribute(value=m.Call(func=m.Name("super")), attr=m.Name("__init__")))
        )
    ]
)
_DOCSTRING = m.SimpleStatementLine(body=[m.Expr(m.SimpleString() | m.ConcatenatedString())])


class HookOverrideCommand(ClassTargetCommand):
    """Base of codemods that generate a typed ``restore_hook`` override plus state on ``self``."""

    def __init__(
        self,
        context: CodemodContext,
        classes: str | Sequence[str] | None = None,
        method: str = "_forward_impl",
        restore_hook: str = "_ensure_spec_dec_state_restored",
        params: str | Sequence[str] = ("attn_metadata", "spec_metadata"),
        annotations: str | Sequence[str] | None = None,
        type_imports: str | Sequence[str] | None = None,
        quote_annotations: bool = False,
        line_length: int = DEFAULT_LINE_LENGTH,
    ) -> None:
        super().__init__(context, classes)
        self.method, self.restore_hook = method, restore_hook
        self.params = split_names(params)
        self.annotations = dict(a.partition("=")[::2] for a in split_names(annotations))
        self.type_imports = parse_imports(split_names(type_imports))
        self.quote, self.line_length = quote_annotations, line_length

    def statement(self, text: str) -> cst.BaseStatement:
        """Parse one generated statement in the file's own configuration."""
        return cst.parse_statement(text, config=self.module.config_for_parsing)

    def annotation(self, param: str) -> str:
        """``Type | None`` for a metadata parameter, quoted when the file needs it; "" when the
        repository names no type for it (left unannotated rather than typed ``object``)."""
        base = self.annotations.get(param)
        if not base:
            return ""
        text = base if "None" in base else f"{base} | None"
        return f'"{text}"' if self.quote and not text.startswith(("'", '"')) else text

    def rebuilt(
        self,
        node: cst.ClassDef,
        target: cst.FunctionDef,
        edited: cst.FunctionDef,
        hook: cst.FunctionDef,
        depth: int,
        blank: int,
        init_line: str,
    ) -> cst.ClassDef:
        """``node`` with ``target`` replaced by ``edited``, ``hook`` right after it, and
        ``init_line`` in ``__init__``."""
        init = next((f for f in method_defs(node) if f.name.value == "__init__"), None)
        body: list[cst.BaseStatement] = []
        for stmt in class_body(node):
            body.append(edited if stmt is target else stmt)
            if stmt is target:
                body.append(hook)
        return with_body(node, self.with_init(body, init, depth, blank, init_line))

    def with_init(
        self,
        body: list[cst.BaseStatement],
        init: cst.FunctionDef | None,
        depth: int,
        blank: int,
        line: str,
    ) -> list[cst.BaseStatement]:
        """``body`` with ``line`` set in ``__init__`` after ``super().__init__`` (added if none)."""
        if init is None:
            attr = line.split("=", 1)[0].split(":", 1)[0].strip().removeprefix("self.")
            new = parse_method(init_text(attr, self.module.default_indent, line), self.module, 0)
            first = next(i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef))
            if first > 0:
                new = new.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * blank)
            old = body[first]
            assert isinstance(old, cst.FunctionDef)
            if not any(ln.comment is None for ln in old.leading_lines):
                old = old.with_changes(
                    leading_lines=[cst.EmptyLine(indent=False)] * blank + list(old.leading_lines)
                )
            return [*body[:first], new, old, *body[first + 1 :]]
        block = init.body
        assert isinstance(block, cst.IndentedBlock)
        stmts = list(block.body)
        at = next((i + 1 for i, s in enumerate(stmts) if m.matches(s, _SUPER_INIT)), None)
        if at is None:
            at = 1 if stmts and m.matches(stmts[0], _DOCSTRING) else 0
        stmts.insert(at, self.statement(line))
        new_init = init.with_changes(body=block.with_changes(body=stmts))
        return [new_init if s is init else s for s in body]

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        """Add ``if TYPE_CHECKING:`` imports for annotation types the module lacks."""
        if not self.changed:
            return updated_node
        return with_type_checking_imports(
            updated_node, self.type_imports, self.module.default_indent
        )
