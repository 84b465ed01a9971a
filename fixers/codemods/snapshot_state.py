"""Make success-path-only save/restore of extra metadata state failure-safe (DESIGN §4).

The locals stay as they are (the method may still read them). After the last save, the pair is
stashed as a tuple on ``self``; after each success-path restore, the stash is cleared; ``__init__``
initialises it to ``None`` (the "nothing saved" sentinel); and a typed, documented override of the
restore hook calls ``super()`` first, returns when nothing is saved, restores, and clears.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import libcst as cst
import libcst.matchers as m
from libcst.codemod import CodemodContext

from fixers.codemods._common import (
    DEFAULT_LINE_LENGTH,
    ClassTargetCommand,
    blank_lines_between_methods,
    class_body,
    docstring_quote,
    method_defs,
    parse_method,
    split_names,
    with_body,
)
from fixers.codemods.examples import Example
from fixers.codemods.snapshot_text import hook_text, init_text, statement_text, type_checking_block

DESCRIPTION = "Snapshot transient metadata state on self and restore it in the restore hook."
STATE_ATTR = "_spec_dec_extra_state"


def _saves(value: str | Sequence[str] | None) -> list[tuple[str, str, str]]:
    """``"orig_a:attn_metadata.a"`` entries -> ``(local, param, attr)``."""
    out = []
    for item in split_names(value):
        local, _, target = item.partition(":")
        param, _, attr = target.partition(".")
        if not (local and param and attr):
            raise ValueError(f"--saves entry {item!r}: expected local:param.attr")
        out.append((local, param, attr))
    return out


class _BlockEditor(cst.CSTTransformer):
    """Inserts the stash after the saves and the clear after each group of restores."""

    def __init__(self, cmd: SnapshotStateCommand, depth: int) -> None:
        self.cmd, self.depth = cmd, depth
        self.saved_blocks = 0
        self.restore_blocks = 0

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.depth += 1

    def _index(self, body: Sequence[cst.BaseStatement], kind: str) -> int:
        last = -1
        for i, stmt in enumerate(body):
            for local, param, attr in self.cmd.saves:
                meta = m.Attribute(value=m.Name(param), attr=m.Name(attr))
                pattern = (
                    m.Assign(targets=[m.AssignTarget(m.Name(local))], value=meta)
                    if kind == "save"
                    else m.Assign(targets=[m.AssignTarget(meta)], value=m.Name(local))
                )
                if m.matches(stmt, m.SimpleStatementLine(body=[pattern])):
                    last = i
        return last

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body = list(updated_node.body)
        save_at, restore_at = self._index(body, "save"), self._index(body, "restore")
        if restore_at >= 0:
            self.restore_blocks += 1
            body.insert(
                restore_at + 1, self.cmd.statement(f"self.{self.cmd.attr} = None", self.depth)
            )
        if save_at >= 0:
            self.saved_blocks += 1
            locals_ = [local for local, _, _ in self.cmd.saves]
            body.insert(save_at + 1, self.cmd.stash(locals_, self.depth))
        self.depth -= 1
        return updated_node.with_changes(body=body)


class SnapshotStateCommand(ClassTargetCommand):
    """Rewrite one method's local save/restore into a stash on ``self`` plus a restore hook."""

    DESCRIPTION: str = DESCRIPTION

    def __init__(
        self,
        context: CodemodContext,
        classes: str | Sequence[str] | None = None,
        method: str = "_forward_impl",
        saves: str | Sequence[str] | None = None,
        restore_hook: str = "_ensure_spec_dec_state_restored",
        params: str | Sequence[str] = ("attn_metadata", "spec_metadata"),
        annotations: str | Sequence[str] | None = None,
        type_imports: str | Sequence[str] | None = None,
        quote_annotations: bool = False,
        line_length: int = DEFAULT_LINE_LENGTH,
    ) -> None:
        super().__init__(context, classes)
        self.method, self.restore_hook = method, restore_hook
        self.saves = _saves(saves)
        self.params = split_names(params)
        self.annotations = dict(a.partition("=")[::2] for a in split_names(annotations))
        self.type_imports = [tuple(i.split(":", 1)) for i in split_names(type_imports)]
        self.quote, self.line_length = quote_annotations, line_length
        self.attr = STATE_ATTR

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        """Options for ``python -m libcst.tool codemod``."""
        ClassTargetCommand.add_args(arg_parser)
        arg_parser.add_argument("--method", default="_forward_impl")
        arg_parser.add_argument("--saves", required=True, help="local:param.attr,...")
        arg_parser.add_argument(
            "--restore-hook", dest="restore_hook", default="_ensure_spec_dec_state_restored"
        )
        arg_parser.add_argument("--params", default="attn_metadata,spec_metadata")
        arg_parser.add_argument("--annotations", default=None, help="param=Type,...")

    # ---- generated statements --------------------------------------------------------------
    def statement(self, text: str, depth: int) -> cst.BaseStatement:
        """Parse one generated statement written for indentation ``depth``."""
        return cst.parse_statement(text, config=self.module.config_for_parsing)

    def stash(self, locals_: list[str], depth: int) -> cst.BaseStatement:
        """``self._spec_dec_extra_state = (a, b)``, wrapped to the line length if needed."""
        text = statement_text(
            f"self.{self.attr} = ", locals_, "", self.module.default_indent, depth, self.line_length
        )
        return self.statement(text, depth)

    def _annotation(self, param: str) -> str:
        base = self.annotations.get(param) or "object"
        text = base if "None" in base else f"{base} | None"
        return f'"{text}"' if self.quote and not text.startswith(("'", '"')) else text

    # ---- class edit --------------------------------------------------------------------------
    def edit_class(self, qualname: str, node: cst.ClassDef) -> cst.ClassDef:
        """Apply all four edits, or none (skip with the reason)."""
        methods = {f.name.value: f for f in method_defs(node)}
        if self.restore_hook in methods:
            self.skip(f"{qualname}: already overrides {self.restore_hook}")
            return node
        target = methods.get(self.method)
        if target is None or not self.saves:
            self.skip(f"{qualname}: no {self.method} with saved metadata locals")
            return node
        depth = len(qualname.split("."))
        editor = _BlockEditor(self, depth)
        edited = target.visit(editor)
        if editor.saved_blocks != 1 or editor.restore_blocks == 0:
            self.skip(f"{qualname}.{self.method}: saves are not in one block with a restore")
            return node
        indent = self.module.default_indent
        blank = blank_lines_between_methods(node)
        hook = parse_method(
            hook_text(
                self.restore_hook,
                self.method,
                self.attr,
                self.params,
                [self._annotation(p) for p in self.params],
                [(p, a) for _, p, a in self.saves],
                indent,
                depth,
                self.line_length,
                docstring_quote(self.module),
            ),
            self.module,
            blank,
        )
        body: list[cst.BaseStatement] = []
        for stmt in class_body(node):
            body.append(edited if stmt is target else stmt)  # type: ignore[arg-type]
            if stmt is target:
                body.append(hook)
        return with_body(node, self._with_init(body, methods.get("__init__"), depth, blank))

    def _with_init(
        self, body: list[cst.BaseStatement], init: cst.FunctionDef | None, depth: int, blank: int
    ) -> list[cst.BaseStatement]:
        line = f"self.{self.attr}: tuple[object, ...] | None = None"
        if init is None:
            new = parse_method(init_text(self.attr, self.module.default_indent), self.module, 0)
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
        super_init = m.SimpleStatementLine(
            body=[
                m.Expr(
                    m.Call(
                        func=m.Attribute(
                            value=m.Call(func=m.Name("super")), attr=m.Name("__init__")
                        )
                    )
                )
            ]
        )
        at = next((i + 1 for i, s in enumerate(stmts) if m.matches(s, super_init)), None)
        if at is None:
            doc = m.SimpleStatementLine(body=[m.Expr(m.SimpleString() | m.ConcatenatedString())])
            at = 1 if stmts and m.matches(stmts[0], doc) else 0
        stmts.insert(at, self.statement(line, depth + 1))
        new_init = init.with_changes(body=block.with_changes(body=stmts))
        return [new_init if s is init else s for s in body]

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        """Add ``if TYPE_CHECKING:`` imports for annotation types the module lacks."""
        if not self.changed or not self.type_imports:
            return updated_node
        body = list(updated_node.body)
        is_import = m.SimpleStatementLine(body=[m.Import() | m.ImportFrom()])
        at = max((i + 1 for i, s in enumerate(body) if m.matches(s, is_import)), default=0)
        has_tc = "TYPE_CHECKING" in updated_node.code
        text = type_checking_block(
            [(a, b) for a, b in self.type_imports], not has_tc, self.module.default_indent
        )
        new = list(cst.parse_module(text, config=updated_node.config_for_parsing).body)
        return updated_node.with_changes(body=[*body[:at], *new, *body[at:]])


_DYN_ARGS: dict[str, object] = {
    "classes": ["DynTreeWorker"],
    "method": "_forward_impl",
    "saves": [
        "orig_tokens:attn_metadata.all_rank_num_tokens",
        "orig_mask:attn_metadata.force_prepare_spec_dec_tree_mask",
    ],
    "annotations": ["attn_metadata=AttentionMetadata", "spec_metadata=SpecMetadata"],
}

EXAMPLES: tuple[Example, ...] = (
    Example(
        "dynamic-tree locals become a snapshot with a restore hook; __init__ added",
        before="""
class DynTreeWorker(SpecWorkerBase):
  def _forward_impl(self, input_ids, attn_metadata: AttentionMetadata, spec_metadata):
    orig_tokens = attn_metadata.all_rank_num_tokens
    orig_mask = attn_metadata.force_prepare_spec_dec_tree_mask
    for step in range(self.max_draft_len):
      attn_metadata.all_rank_num_tokens = [step]
      attn_metadata.force_prepare_spec_dec_tree_mask = True
    attn_metadata.all_rank_num_tokens = orig_tokens
    attn_metadata.force_prepare_spec_dec_tree_mask = orig_mask
    return input_ids
""",
        after='''
class DynTreeWorker(SpecWorkerBase):
  def __init__(self, *args: object, **kwargs: object) -> None:
    super().__init__(*args, **kwargs)
    self._spec_dec_extra_state: tuple[object, ...] | None = None

  def _forward_impl(self, input_ids, attn_metadata: AttentionMetadata, spec_metadata):
    orig_tokens = attn_metadata.all_rank_num_tokens
    orig_mask = attn_metadata.force_prepare_spec_dec_tree_mask
    self._spec_dec_extra_state = (orig_tokens, orig_mask)
    for step in range(self.max_draft_len):
      attn_metadata.all_rank_num_tokens = [step]
      attn_metadata.force_prepare_spec_dec_tree_mask = True
    attn_metadata.all_rank_num_tokens = orig_tokens
    attn_metadata.force_prepare_spec_dec_tree_mask = orig_mask
    self._spec_dec_extra_state = None
    return input_ids

  def _ensure_spec_dec_state_restored(
    self, attn_metadata: AttentionMetadata | None, spec_metadata: SpecMetadata | None
  ) -> None:
    """Restore the state ``_forward_impl`` saved if it failed before putting it back."""
    super()._ensure_spec_dec_state_restored(attn_metadata, spec_metadata)
    saved = self._spec_dec_extra_state
    if saved is None:
      return
    if attn_metadata is not None:
      attn_metadata.all_rank_num_tokens, attn_metadata.force_prepare_spec_dec_tree_mask = saved
    self._spec_dec_extra_state = None
''',
        args={**_DYN_ARGS, "line_length": 120},
    ),
    Example(
        "existing __init__ gets the sentinel after super().__init__; TYPE_CHECKING import added",
        before="""
from base import SpecWorkerBase


class DynTreeWorker(SpecWorkerBase):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg

    def _forward_impl(self, attn_metadata, spec_metadata):
        orig_tokens = attn_metadata.all_rank_num_tokens
        orig_mask = attn_metadata.force_prepare_spec_dec_tree_mask
        attn_metadata.all_rank_num_tokens = None
        attn_metadata.force_prepare_spec_dec_tree_mask = True
        attn_metadata.all_rank_num_tokens = orig_tokens
        attn_metadata.force_prepare_spec_dec_tree_mask = orig_mask
""",
        after='''
from base import SpecWorkerBase
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pkg.attention import AttentionMetadata


class DynTreeWorker(SpecWorkerBase):
    def __init__(self, cfg):
        super().__init__()
        self._spec_dec_extra_state: tuple[object, ...] | None = None
        self.cfg = cfg

    def _forward_impl(self, attn_metadata, spec_metadata):
        orig_tokens = attn_metadata.all_rank_num_tokens
        orig_mask = attn_metadata.force_prepare_spec_dec_tree_mask
        self._spec_dec_extra_state = (orig_tokens, orig_mask)
        attn_metadata.all_rank_num_tokens = None
        attn_metadata.force_prepare_spec_dec_tree_mask = True
        attn_metadata.all_rank_num_tokens = orig_tokens
        attn_metadata.force_prepare_spec_dec_tree_mask = orig_mask
        self._spec_dec_extra_state = None

    def _ensure_spec_dec_state_restored(
        self, attn_metadata: "AttentionMetadata | None", spec_metadata: "object | None"
    ) -> None:
        """Restore the state ``_forward_impl`` saved if it failed before putting it back."""
        super()._ensure_spec_dec_state_restored(attn_metadata, spec_metadata)
        saved = self._spec_dec_extra_state
        if saved is None:
            return
        if attn_metadata is not None:
            (
                attn_metadata.all_rank_num_tokens,
                attn_metadata.force_prepare_spec_dec_tree_mask,
            ) = saved
        self._spec_dec_extra_state = None
''',
        args={
            **_DYN_ARGS,
            "annotations": ["attn_metadata=AttentionMetadata"],
            "type_imports": ["pkg.attention:AttentionMetadata"],
            "quote_annotations": True,
        },
    ),
    Example(
        "already has a restore hook: skipped",
        before="""
class DynTreeWorker(SpecWorkerBase):
    def _forward_impl(self, attn_metadata, spec_metadata):
        return None

    def _ensure_spec_dec_state_restored(self, attn_metadata, spec_metadata):
        super()._ensure_spec_dec_state_restored(attn_metadata, spec_metadata)
""",
        after=None,
        args=_DYN_ARGS,
        skip_reason="already overrides _ensure_spec_dec_state_restored",
    ),
)
