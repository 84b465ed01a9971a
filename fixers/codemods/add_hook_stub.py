"""Give a test double the implementation hook it lacks, so it can be instantiated again.

Adds, after the class's last method (or in place of a lone ``pass``/``...``), the hook with the
base's own signature (``fixers.sweep.stub_types``: annotations the module can see, imports under
``if TYPE_CHECKING:`` for those it cannot), so the stub is a compatible override for mypy::

    def _forward_impl(self, input_ids: torch.Tensor) -> SampleState:
        \"\"\"Stub for SpecWorkerBase._forward_impl: this test double never runs it.\"\"\"
        raise NotImplementedError

Without the base's definition (the command line's default) the parameters are
``*args: object, **kwargs: object`` and the return type ``None``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import libcst as cst
from libcst.codemod import CodemodContext

from fixers.codemods._common import (
    ClassTargetCommand,
    blank_lines_between_methods,
    class_body,
    docstring_quote,
    is_placeholder,
    method_defs,
    parse_method,
    with_body,
)
from fixers.codemods._type_imports import parse_imports, with_type_checking_imports
from fixers.codemods.examples import Example
from fixers.codemods.registry import CodemodSpec, PlanContext, Step
from fixers.sweep.fix_types import base_method
from fixers.sweep.index import Hierarchy
from fixers.sweep.stub_types import stub_signature
from fixers.sweep.violation_types import Violation

DESCRIPTION = "Add a typed, documented implementation-hook stub to test doubles that lack one."
GENERIC_PARAMS = "self, *args: object, **kwargs: object"


class AddHookStubCommand(ClassTargetCommand):
    """Append ``def _forward_impl(...) -> None: raise NotImplementedError`` to targeted classes."""

    DESCRIPTION: str = DESCRIPTION

    def __init__(
        self,
        context: CodemodContext,
        classes: str | Sequence[str] | None = None,
        hook: str = "_forward_impl",
        base: str = "SpecWorkerBase",
        params: str = GENERIC_PARAMS,
        returns: str = " -> None",
        is_async: bool = False,
        type_imports: Sequence[str] = (),
    ) -> None:
        super().__init__(context, classes)
        self.hook, self.base = hook, base
        self.params, self.returns, self.is_async = params, returns, is_async
        self.type_imports = parse_imports(type_imports)

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        """Options for ``python -m libcst.tool codemod``."""
        ClassTargetCommand.add_args(arg_parser)
        arg_parser.add_argument("--hook", default="_forward_impl")
        arg_parser.add_argument("--base", default="SpecWorkerBase")

    def _stub(self, blank_lines: int) -> cst.FunctionDef:
        indent = self.module.default_indent
        quote = docstring_quote(self.module)
        prefix = "async def" if self.is_async else "def"
        text = (
            f"{prefix} {self.hook}({self.params}){self.returns}:\n"
            f"{indent}{quote}Stub for {self.base}.{self.hook}: this test double never runs it."
            f"{quote}\n"
            f"{indent}raise NotImplementedError\n"
        )
        return parse_method(text, self.module, blank_lines)

    def edit_class(self, qualname: str, node: cst.ClassDef) -> cst.ClassDef:
        """Insert the stub after the last method, or replace a placeholder body."""
        methods = method_defs(node)
        if any(f.name.value == self.hook for f in methods):
            self.skip(f"{qualname}: already defines {self.hook}")
            return node
        body = class_body(node)
        if len(body) == 1 and is_placeholder(body[0]):
            return with_body(node, [self._stub(0)])
        stub = self._stub(blank_lines_between_methods(node) if methods else 1)
        last = max((i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef)), default=-1)
        position = last + 1 if last >= 0 else len(body)
        return with_body(node, [*body[:position], stub, *body[position:]])

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        """Import what the stub's annotations name under ``if TYPE_CHECKING:``."""
        if not self.changed:
            return updated_node
        return with_type_checking_imports(
            updated_node, self.type_imports, self.module.default_indent
        )


def plan_step(context: PlanContext, hierarchy: Hierarchy, v: Violation) -> Step:
    """The stub step for a test double's ``missing-hook``: the hook as the base declares it."""
    contract = hierarchy.contract
    qualname = hierarchy.members[v.class_qualname].facts.qualname
    options: dict[str, object] = {
        "classes": [qualname],
        "hook": contract.hook,
        "base": contract.base,
    }
    declared = base_method(context.index, hierarchy, contract.hook)
    if declared is not None:
        base_rel, function = declared
        signature = stub_signature(context.index, base_rel, function, v.path, typed=True)
        options |= {
            "params": signature.params,
            "returns": signature.returns,
            "is_async": signature.is_async,
            "type_imports": list(signature.imports),
        }
    return CODEMOD.step(options, (qualname,))


_ARGS: dict[str, object] = {"classes": ["_Worker"]}

EXAMPLES: tuple[Example, ...] = (
    Example(
        "test double with only an attribute",
        before="""
class _Worker(SpecWorkerBase):
    max_draft_len = 3
""",
        after='''
class _Worker(SpecWorkerBase):
    max_draft_len = 3

    def _forward_impl(self, *args: object, **kwargs: object) -> None:
        """Stub for SpecWorkerBase._forward_impl: this test double never runs it."""
        raise NotImplementedError
''',
        args=_ARGS,
    ),
    Example(
        "after the last method, two-space indent, trailing attribute kept after it",
        before="""
class _Worker(SpecWorkerBase):
  def __init__(self):
    super().__init__()

  @property
  def max_draft_len(self):
    return 3
  NAME = "w"
""",
        after='''
class _Worker(SpecWorkerBase):
  def __init__(self):
    super().__init__()

  @property
  def max_draft_len(self):
    return 3

  def _forward_impl(self, *args: object, **kwargs: object) -> None:
    """Stub for SpecWorkerBase._forward_impl: this test double never runs it."""
    raise NotImplementedError
  NAME = "w"
''',
        args=_ARGS,
    ),
    Example(
        "placeholder body replaced",
        before="""
class _Worker(SpecWorkerBase):
    pass
""",
        after='''
class _Worker(SpecWorkerBase):
    def _forward_impl(self, *args: object, **kwargs: object) -> None:
        """Stub for SpecWorkerBase._forward_impl: this test double never runs it."""
        raise NotImplementedError
''',
        args=_ARGS,
    ),
    Example(
        "already has the hook: skipped",
        before="""
class _Worker(SpecWorkerBase):
    def _forward_impl(self, *args):
        return None
""",
        after=None,
        args=_ARGS,
        skip_reason="already defines _forward_impl",
    ),
)

CODEMOD = CodemodSpec(
    name="add_hook_stub",
    fix="stub",
    kinds=("missing-hook",),
    fixer="add-hook-stub",
    command=AddHookStubCommand,
    build_step=plan_step,
    order=1,
    description=DESCRIPTION,
    examples=EXAMPLES,
)
