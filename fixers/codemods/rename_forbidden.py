"""Rename the forbidden override (``forward``) of targeted classes to the hook (``_forward_impl``).

Only the method's name token changes: decorators, comment lines above ``def``, the signature's
formatting and the body stay byte for byte. Inside a renamed method, ``super().forward(`` becomes
``super()._forward_impl(`` for the classes in ``super_classes`` (a parent's ``forward`` was
renamed too, so calling the base's wrapper again would recurse).
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Sequence

import libcst as cst
import libcst.matchers as m
from libcst.codemod import CodemodContext

from fixers.codemods._common import ClassTargetCommand, split_names
from fixers.codemods.examples import Example
from fixers.codemods.registry import CodemodSpec, PlanContext, Step
from fixers.sweep.fix_types import class_method
from fixers.sweep.index import Hierarchy
from fixers.sweep.outcome import Skip
from fixers.sweep.violation_types import Violation

DESCRIPTION = "Rename a forbidden method override to the contract's implementation hook."
RENAMED = "renamed"  # the plan mark: this class's forbidden method is now the hook


class _SuperCallRewriter(cst.CSTTransformer):
    def __init__(self, forbidden: str, hook: str) -> None:
        self.forbidden, self.hook = forbidden, hook

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.Attribute:
        if updated_node.attr.value == self.forbidden and m.matches(
            updated_node.value, m.Call(func=m.Name("super"))
        ):
            return updated_node.with_changes(attr=cst.Name(self.hook))
        return updated_node


class RenameForbiddenCommand(ClassTargetCommand):
    """``forward`` -> ``_forward_impl`` in the targeted classes."""

    DESCRIPTION: str = DESCRIPTION

    def __init__(
        self,
        context: CodemodContext,
        classes: str | Sequence[str] | None = None,
        forbidden: str = "forward",
        hook: str = "_forward_impl",
        super_classes: str | Sequence[str] | None = None,
    ) -> None:
        super().__init__(context, classes)
        self.forbidden, self.hook = forbidden, hook
        self.super_classes = set(split_names(super_classes))

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        """Options for ``python -m libcst.tool codemod``."""
        ClassTargetCommand.add_args(arg_parser)
        arg_parser.add_argument("--forbidden", default="forward")
        arg_parser.add_argument("--hook", default="_forward_impl")
        arg_parser.add_argument("--super-classes", dest="super_classes", default=None)

    def edit_class(self, qualname: str, node: cst.ClassDef) -> cst.ClassDef:
        """Rename the method in place (same position, same formatting)."""
        body = node.body
        if not isinstance(body, cst.IndentedBlock):
            self.skip(f"{qualname}: one-line class body")
            return node
        names = {s.name.value for s in body.body if isinstance(s, cst.FunctionDef)}
        if self.forbidden not in names:
            self.skip(f"{qualname}: no {self.forbidden} to rename")
            return node
        if self.hook in names:
            self.skip(f"{qualname}: defines both {self.forbidden} and {self.hook}")
            return node
        rewriter = _SuperCallRewriter(self.forbidden, self.hook)
        statements: list[cst.BaseStatement] = []
        for stmt in body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == self.forbidden:
                stmt = stmt.with_changes(name=stmt.name.with_changes(value=self.hook))
                if qualname in self.super_classes:
                    stmt = stmt.visit(rewriter)  # type: ignore[assignment]
            statements.append(stmt)
        return node.with_changes(body=body.with_changes(body=statements))


def _calls_super(func: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    return any(
        isinstance(n, ast.Attribute)
        and n.attr == name
        and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Name)
        and n.value.func.id == "super"
        for n in ast.walk(func)
    )


def plan_step(context: PlanContext, hierarchy: Hierarchy, v: Violation) -> Step | Skip:
    """The rename step for a ``forbidden-override``, or a skip when ``super()`` would recurse."""
    contract = hierarchy.contract
    member = hierarchy.members[v.class_qualname]
    func = class_method(context.index, v.path, member.facts.qualname, contract.forbidden)
    super_classes: list[str] = []
    if func is not None and _calls_super(func, contract.forbidden):
        parents = hierarchy.ancestors(v.class_qualname)[1:]
        if not any({contract.forbidden, contract.hook} & set(p.facts.methods) for p in parents):
            return Skip(
                v.path,
                f"{member.facts.qualname}.{contract.forbidden} calls "
                f"super().{contract.forbidden}, which would re-enter the base wrapper: "
                "needs a human",
                v.class_qualname,
            )
        super_classes.append(member.facts.qualname)
    context.mark(RENAMED, v)
    options: dict[str, object] = {
        "classes": [member.facts.qualname],
        "forbidden": contract.forbidden,
        "hook": contract.hook,
        "super_classes": super_classes,
    }
    return CODEMOD.step(options, (member.facts.qualname,))


_ARGS: dict[str, object] = {"classes": ["DynTreeWorker"]}

EXAMPLES: tuple[Example, ...] = (
    Example(
        "decorator and comments above def are kept",
        before="""
class DynTreeWorker(SpecWorkerBase):
    # Draft tokens for the dynamic tree.
    # @torch.compile(options={"max-autotune": True})
    @nvtx_range("mtp_dyn.forward")
    def forward(self, input_ids, position_ids, hidden_states, logits,
                attn_metadata, spec_metadata, draft_model, resource_manager=None):
        return  logits   # odd spacing kept
""",
        after="""
class DynTreeWorker(SpecWorkerBase):
    # Draft tokens for the dynamic tree.
    # @torch.compile(options={"max-autotune": True})
    @nvtx_range("mtp_dyn.forward")
    def _forward_impl(self, input_ids, position_ids, hidden_states, logits,
                attn_metadata, spec_metadata, draft_model, resource_manager=None):
        return  logits   # odd spacing kept
""",
        args=_ARGS,
    ),
    Example(
        "black-style multi-line signature, other classes untouched",
        before="""
class Other(SpecWorkerBase):
    def forward(self, x):
        return x


class DynTreeWorker(SpecWorkerBase):
    def forward(
        self,
        input_ids: torch.Tensor,
        attn_metadata: AttentionMetadata,
        resource_manager: ResourceManager | None = None,
    ) -> dict[str, torch.Tensor]:
        return {}
""",
        after="""
class Other(SpecWorkerBase):
    def forward(self, x):
        return x


class DynTreeWorker(SpecWorkerBase):
    def _forward_impl(
        self,
        input_ids: torch.Tensor,
        attn_metadata: AttentionMetadata,
        resource_manager: ResourceManager | None = None,
    ) -> dict[str, torch.Tensor]:
        return {}
""",
        args=_ARGS,
    ),
    Example(
        "super().forward in a renamed child of a renamed parent",
        before="""
class Outer:
    class Child(Parent):
        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            return self.forward_count + out
""",
        after="""
class Outer:
    class Child(Parent):
        def _forward_impl(self, *args, **kwargs):
            out = super()._forward_impl(*args, **kwargs)
            return self.forward_count + out
""",
        args={"classes": ["Outer.Child"], "super_classes": ["Outer.Child"]},
    ),
    Example(
        "already conforming: skipped with the reason",
        before="""
class DynTreeWorker(SpecWorkerBase):
    def _forward_impl(self, *args):
        return None
""",
        after=None,
        args=_ARGS,
        skip_reason="no forward to rename",
    ),
    Example(
        "both methods defined: left for a human",
        before="""
class DynTreeWorker(SpecWorkerBase):
    def forward(self, *args):
        return self._forward_impl(*args)

    def _forward_impl(self, *args):
        return None
""",
        after=None,
        args=_ARGS,
        skip_reason="defines both",
    ),
)

CODEMOD = CodemodSpec(
    name="rename_forbidden",
    fix="rename",
    kinds=("forbidden-override",),
    fixer="rename-forbidden-override",
    command=RenameForbiddenCommand,
    build_step=plan_step,
    order=0,
    description=DESCRIPTION,
    examples=EXAMPLES,
)
