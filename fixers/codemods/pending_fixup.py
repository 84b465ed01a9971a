"""Make a deferred in-place fix-up failure-safe with a pending flag (DESIGN §4, PARD/DFlash).

A tensor adjusted in place during the call (``kv_lens_cuda[nc:bs] += 1``) and compensated later
(``self._rewind_kv_lens(attn_metadata)``) leaks the adjustment when the call fails in between.
The maintainers' fix, generated here: a flag on ``self`` set right after the adjustment and
cleared right after the compensation, initialised in ``__init__``, and a typed override of the
restore hook that calls ``super()`` first and re-runs the compensation while the flag is set.
"""

from __future__ import annotations

import argparse
import ast
import textwrap
from collections.abc import Sequence
from typing import Any

import libcst as cst
from libcst.codemod import CodemodContext

from fixers.codemods._common import (
    ClassTargetCommand,
    blank_lines_between_methods,
    docstring_quote,
    method_defs,
    parse_method,
)
from fixers.codemods._hook import HookOverrideCommand
from fixers.codemods._hook_plan import claim_restore_hook, hook_options
from fixers.codemods.examples import Example
from fixers.codemods.registry import CodemodSpec, PlanContext, Step
from fixers.codemods.snapshot_text import pending_hook_text
from fixers.sweep.index import Hierarchy
from fixers.sweep.outcome import Skip
from fixers.sweep.violation_types import Violation

DESCRIPTION = "Guard a deferred in-place fix-up with a pending flag the restore hook honours."
_EMPTY = cst.Module(body=[])


def normalized(code: str) -> str:
    """Source text in ``ast.unparse`` form (formatting and comments do not matter)."""
    try:
        return ast.unparse(ast.parse(textwrap.dedent(code).strip()))
    except SyntaxError:
        return code.strip()


class PendingFixupCommand(HookOverrideCommand):
    """Set ``flag`` after ``adjust``, clear it after ``compensate``, and honour it in the hook."""

    DESCRIPTION: str = DESCRIPTION

    def __init__(
        self,
        context: CodemodContext,
        classes: str | Sequence[str] | None = None,
        adjust: str = "",
        compensate: str = "",
        flag: str = "_fixup_pending",
        **options: Any,
    ) -> None:
        super().__init__(context, classes, **options)
        self.adjust, self.compensate = normalized(adjust), normalized(compensate)
        self.flag = flag

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        """Options for ``python -m libcst.tool codemod``."""
        ClassTargetCommand.add_args(arg_parser)
        arg_parser.add_argument("--method", default="_forward_impl")
        arg_parser.add_argument("--adjust", required=True, help="the adjusting statement")
        arg_parser.add_argument("--compensate", required=True, help="the compensating statement")
        arg_parser.add_argument("--flag", default="_fixup_pending")
        arg_parser.add_argument(
            "--restore-hook", dest="restore_hook", default="_ensure_spec_dec_state_restored"
        )
        arg_parser.add_argument("--params", default="attn_metadata,spec_metadata")
        arg_parser.add_argument("--annotations", default=None, help="param=Type,...")

    def _flagged(self, func: cst.FunctionDef) -> cst.FunctionDef | None:
        block = func.body
        if not isinstance(block, cst.IndentedBlock):
            return None
        body: list[cst.BaseStatement] = []
        seen = {"adjust": 0, "compensate": 0}
        for stmt in block.body:
            body.append(stmt)
            code = normalized(_EMPTY.code_for_node(stmt))
            if code == self.adjust:
                seen["adjust"] += 1
                body.append(self.statement(f"self.{self.flag} = True"))
            elif code == self.compensate:
                seen["compensate"] += 1
                body.append(self.statement(f"self.{self.flag} = False"))
        if seen != {"adjust": 1, "compensate": 1}:
            return None
        return func.with_changes(body=block.with_changes(body=body))

    def edit_class(self, qualname: str, node: cst.ClassDef) -> cst.ClassDef:
        """Flag, clear, initialise and honour, or nothing (skip with the reason)."""
        methods = {f.name.value: f for f in method_defs(node)}
        if self.restore_hook in methods:
            self.skip(f"{qualname}: already overrides {self.restore_hook}")
            return node
        target = methods.get(self.method)
        edited = self._flagged(target) if target is not None else None
        if target is None or edited is None:
            self.skip(
                f"{qualname}.{self.method}: the adjustment and its compensation are not each "
                "one top-level statement"
            )
            return node
        depth = len(qualname.split("."))
        blank = blank_lines_between_methods(node)
        hook = parse_method(
            pending_hook_text(
                self.restore_hook,
                self.method,
                self.flag,
                self.params,
                [self.annotation(p) for p in self.params],
                self.compensate,
                self.module.default_indent,
                depth,
                self.line_length,
                docstring_quote(self.module),
            ),
            self.module,
            blank,
        )
        line = f"self.{self.flag}: bool = False"
        return self.rebuilt(node, target, edited, hook, depth, blank, line)


def plan_step(context: PlanContext, hierarchy: Hierarchy, v: Violation) -> Step | Skip:
    """The pending-flag step for a ``deferred-fixup``, unless the restore hook is taken."""
    clash = claim_restore_hook(context, hierarchy, v)
    if clash is not None:
        return clash
    common = hook_options(context, hierarchy, v)
    options = {**common, "adjust": v.fixup[0], "compensate": v.fixup[1], "flag": v.flag}
    return CODEMOD.step(options, (hierarchy.members[v.class_qualname].facts.qualname,))


_PARD_ARGS: dict[str, object] = {
    "classes": ["PardWorker"],
    "adjust": "attn_metadata.kv_lens_cuda[nc:bs] += 1",
    "compensate": "self._rewind_kv_lens(attn_metadata)",
    "flag": "_kv_lens_cuda_fixup_pending",
    "annotations": ["attn_metadata=AttentionMetadata", "spec_metadata=SpecMetadata"],
    "line_length": 100,
}

EXAMPLES: tuple[Example, ...] = (
    Example(
        "PARD-style bump and deferred rewind get a pending flag and a hook",
        before="""
class PardWorker(SpecWorkerBase):
    def __init__(self, config):
        super().__init__(config)
        self.k = config.k

    @staticmethod
    def _rewind_kv_lens(attn_metadata):
        attn_metadata.kv_lens_cuda[: attn_metadata.num_seqs] -= 1

    def _forward_impl(self, input_ids, attn_metadata, spec_metadata):
        nc, bs = attn_metadata.num_contexts, attn_metadata.num_seqs
        attn_metadata.kv_lens_cuda[nc:bs] += 1  # the draft window starts one later
        drafts = self.draft(input_ids, attn_metadata)
        self._rewind_kv_lens(attn_metadata)
        return drafts
""",
        after='''
class PardWorker(SpecWorkerBase):
    def __init__(self, config):
        super().__init__(config)
        self._kv_lens_cuda_fixup_pending: bool = False
        self.k = config.k

    @staticmethod
    def _rewind_kv_lens(attn_metadata):
        attn_metadata.kv_lens_cuda[: attn_metadata.num_seqs] -= 1

    def _forward_impl(self, input_ids, attn_metadata, spec_metadata):
        nc, bs = attn_metadata.num_contexts, attn_metadata.num_seqs
        attn_metadata.kv_lens_cuda[nc:bs] += 1  # the draft window starts one later
        self._kv_lens_cuda_fixup_pending = True
        drafts = self.draft(input_ids, attn_metadata)
        self._rewind_kv_lens(attn_metadata)
        self._kv_lens_cuda_fixup_pending = False
        return drafts

    def _ensure_spec_dec_state_restored(
        self, attn_metadata: AttentionMetadata | None, spec_metadata: SpecMetadata | None
    ) -> None:
        """Undo the in-place adjustment ``_forward_impl`` left pending when it failed."""
        super()._ensure_spec_dec_state_restored(attn_metadata, spec_metadata)
        if not self._kv_lens_cuda_fixup_pending:
            return
        if attn_metadata is not None:
            self._rewind_kv_lens(attn_metadata)
        self._kv_lens_cuda_fixup_pending = False
''',
        args=_PARD_ARGS,
    ),
    Example(
        "already has a restore hook: skipped",
        before="""
class PardWorker(SpecWorkerBase):
    def _forward_impl(self, attn_metadata, spec_metadata):
        attn_metadata.kv_lens_cuda[nc:bs] += 1
        self._rewind_kv_lens(attn_metadata)

    def _ensure_spec_dec_state_restored(self, attn_metadata, spec_metadata):
        super()._ensure_spec_dec_state_restored(attn_metadata, spec_metadata)
""",
        after=None,
        args=_PARD_ARGS,
        skip_reason="already overrides _ensure_spec_dec_state_restored",
    ),
)

CODEMOD = CodemodSpec(
    name="pending_fixup",
    fix="pending-flag",
    review="patch",
    kinds=("deferred-fixup",),
    fixer="pending-fixup",
    command=PendingFixupCommand,
    build_step=plan_step,
    order=3,
    description=DESCRIPTION,
    examples=EXAMPLES,
)
