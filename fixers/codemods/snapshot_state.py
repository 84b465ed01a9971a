"""Make success-path-only save/restore of extra metadata state failure-safe (DESIGN §4).

The saves stay as they are (the method may still read them). After the last save, the saved
values are stashed as a tuple on ``self``; after each success-path restore, the stash is cleared;
``__init__`` initialises it to ``None`` (the "nothing saved" sentinel); and a typed, documented
override of the restore hook calls ``super()`` first, returns when nothing is saved, restores
(``copy_`` for tensors saved with ``.clone()``), and clears. A save under a condition (warm-up)
stashes only when its branch ran.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst
from libcst.codemod import CodemodContext

from fixers.codemods._common import (
    ClassTargetCommand,
    blank_lines_between_methods,
    docstring_quote,
    method_defs,
    parse_method,
    split_names,
)
from fixers.codemods._hook import HookOverrideCommand
from fixers.codemods._hook_plan import claim_restore_hook, hook_options
from fixers.codemods.examples import Example
from fixers.codemods.registry import CodemodSpec, PlanContext, Step
from fixers.codemods.snapshot_text import hook_text, statement_text
from fixers.sweep.index import Hierarchy
from fixers.sweep.outcome import Skip
from fixers.sweep.violation_types import Violation

DESCRIPTION = "Snapshot transient metadata state on self and restore it in the restore hook."
STATE_ATTR = "_spec_dec_extra_state"
_EMPTY = cst.Module(body=[])


@dataclass(frozen=True)
class SavedField:
    """``holder`` (a local or ``self.x``) holds ``param.attr``; ``tensor``: saved by ``clone()``."""

    holder: str
    param: str
    attr: str
    tensor: bool

    @property
    def field(self) -> str:
        """``param.attr``."""
        return f"{self.param}.{self.attr}"


def _saves(value: str | Sequence[str] | None) -> list[SavedField]:
    """``"orig_a:attn_metadata.a"`` / ``"self._b:attn_metadata.b:tensor"`` entries."""
    out = []
    for item in split_names(value):
        holder, _, rest = item.partition(":")
        target, _, kind = rest.partition(":")
        param, _, attr = target.partition(".")
        if not (holder and param and attr) or kind not in ("", "value", "tensor"):
            raise ValueError(f"--saves entry {item!r}: expected holder:param.attr[:tensor]")
        out.append(SavedField(holder, param, attr, kind == "tensor"))
    return out


def _code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node).strip()


def _is_save(stmt: cst.BaseStatement, saved: SavedField) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    small = stmt.body[0]
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return False
    value = saved.field + (".clone()" if saved.tensor else "")
    return _code(small.targets[0].target) == saved.holder and _code(small.value) == value


def _is_restore(stmt: cst.BaseStatement, saved: SavedField) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    small = stmt.body[0]
    if saved.tensor:
        return isinstance(small, cst.Expr) and _code(small.value) == (
            f"{saved.field}.copy_({saved.holder})"
        )
    return (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and _code(small.targets[0].target) == saved.field
        and _code(small.value) == saved.holder
    )


class _BlockEditor(cst.CSTTransformer):
    """Inserts the stash after the saves and the clear after each group of restores."""

    def __init__(self, cmd: SnapshotStateCommand, depth: int) -> None:
        self.cmd, self.depth = cmd, depth
        self.saved_blocks = 0
        self.restore_blocks = 0

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.depth += 1

    def _index(self, body: Sequence[cst.BaseStatement], kind: str) -> int:
        match = _is_save if kind == "save" else _is_restore
        last = -1
        for i, stmt in enumerate(body):
            if any(match(stmt, saved) for saved in self.cmd.saves):
                last = i
        return last

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body = list(updated_node.body)
        save_at, restore_at = self._index(body, "save"), self._index(body, "restore")
        if restore_at >= 0:
            self.restore_blocks += 1
            body.insert(restore_at + 1, self.cmd.statement(f"self.{self.cmd.attr} = None"))
        if save_at >= 0:
            self.saved_blocks += 1
            holders = [saved.holder for saved in self.cmd.saves]
            body.insert(save_at + 1, self.cmd.stash(holders, self.depth))
        self.depth -= 1
        return updated_node.with_changes(body=body)


class SnapshotStateCommand(HookOverrideCommand):
    """Rewrite one method's success-path save/restore into a stash on ``self`` plus a hook."""

    DESCRIPTION: str = DESCRIPTION

    def __init__(
        self,
        context: CodemodContext,
        classes: str | Sequence[str] | None = None,
        saves: str | Sequence[str] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(context, classes, **options)
        self.saves = _saves(saves)
        self.attr = STATE_ATTR

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        """Options for ``python -m libcst.tool codemod``."""
        ClassTargetCommand.add_args(arg_parser)
        arg_parser.add_argument("--method", default="_forward_impl")
        arg_parser.add_argument("--saves", required=True, help="holder:param.attr[:tensor],...")
        arg_parser.add_argument(
            "--restore-hook", dest="restore_hook", default="_ensure_spec_dec_state_restored"
        )
        arg_parser.add_argument("--params", default="attn_metadata,spec_metadata")
        arg_parser.add_argument("--annotations", default=None, help="param=Type,...")

    def stash(self, holders: list[str], depth: int) -> cst.BaseStatement:
        """``self._spec_dec_extra_state = (a, b)``, wrapped to the line length if needed."""
        text = statement_text(
            f"self.{self.attr} = ", holders, "", self.module.default_indent, depth, self.line_length
        )
        return self.statement(text)

    def edit_class(self, qualname: str, node: cst.ClassDef) -> cst.ClassDef:
        """Apply all four edits, or none (skip with the reason)."""
        methods = {f.name.value: f for f in method_defs(node)}
        if self.restore_hook in methods:
            self.skip(f"{qualname}: already overrides {self.restore_hook}")
            return node
        target = methods.get(self.method)
        if target is None or not self.saves:
            self.skip(f"{qualname}: no {self.method} with saved metadata state")
            return node
        depth = len(qualname.split("."))
        editor = _BlockEditor(self, depth)
        edited = target.visit(editor)
        assert isinstance(edited, cst.FunctionDef)
        if editor.saved_blocks != 1 or editor.restore_blocks == 0:
            self.skip(f"{qualname}.{self.method}: saves are not in one block with a restore")
            return node
        blank = blank_lines_between_methods(node)
        hook = parse_method(
            hook_text(
                self.restore_hook,
                self.method,
                self.attr,
                self.params,
                [self.annotation(p) for p in self.params],
                [(saved.param, saved.attr) for saved in self.saves],
                self.module.default_indent,
                depth,
                self.line_length,
                docstring_quote(self.module),
                [saved.tensor for saved in self.saves],
            ),
            self.module,
            blank,
        )
        line = f"self.{self.attr}: tuple[object, ...] | None = None"
        return self.rebuilt(node, target, edited, hook, depth, blank, line)


def plan_step(context: PlanContext, hierarchy: Hierarchy, v: Violation) -> Step | Skip:
    """The snapshot step for a ``transient-state``, unless the restore hook is already taken."""
    clash = claim_restore_hook(context, hierarchy, v)
    if clash is not None:
        return clash
    saves = [f"{holder}:{p}.{a}:{kind}" for holder, p, a, kind in v.saves]
    options = {**hook_options(context, hierarchy, v), "saves": saves}
    return CODEMOD.step(options, (hierarchy.members[v.class_qualname].facts.qualname,))


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
        self, attn_metadata: "AttentionMetadata | None", spec_metadata
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

CODEMOD = CodemodSpec(
    name="snapshot_state",
    fix="snapshot",
    review="patch",
    kinds=("transient-state",),
    fixer="snapshot-state",
    command=SnapshotStateCommand,
    build_step=plan_step,
    order=2,
    description=DESCRIPTION,
    examples=EXAMPLES,
)
