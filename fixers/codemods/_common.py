"""Shared pieces of the contract codemods: class targeting and the target file's own style."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from typing import TypeVar

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext, SkipFile
from libcst.metadata import MetadataWrapper

DEFAULT_LINE_LENGTH = 88
# The only nodes a class definition can be below: a module, and the compound statements and
# blocks that hold statements. Nothing else is visited (no expression, decorator, parameter,
# whitespace or simple statement line can hold a class), and what is not visited is not rebuilt.
_MAY_HOLD_CLASSES = (
    cst.Module,
    cst.IndentedBlock,
    cst.ClassDef,
    cst.FunctionDef,
    cst.If,
    cst.Else,
    cst.For,
    cst.While,
    cst.With,
    cst.Try,
    cst.TryStar,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Finally,
    cst.Match,
    cst.MatchCase,
)
_NodeT = TypeVar("_NodeT", bound=cst.CSTNode)


def split_names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"A,B.C"`` or ``["A", "B.C"]`` -> ``("A", "B.C")``."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(item.strip() for item in items if item.strip())


class ClassTargetCommand(CodemodCommand, cst.CSTTransformer):
    """A codemod that edits only the classes named by qualname in ``classes``.

    Subclasses implement ``edit_class``; if no targeted class is found (or none changes) the
    file is skipped with a reason, so "not applicable" is an explicit outcome.

    A plain ``CSTTransformer`` (no matcher decorators: none of these commands uses them, and
    their bookkeeping on every node was most of an edit's cost) that only walks the statements
    a class can be in; it reads no metadata, so the tree is not copied first either.
    """

    def __init__(self, context: CodemodContext, classes: str | Sequence[str] | None = None) -> None:
        CodemodCommand.__init__(self, context)
        self.targets = split_names(classes)
        self.stack: list[str] = []
        self.seen: set[str] = set()
        self.changed: set[str] = set()
        self.reasons: list[str] = []

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        """Options for ``python -m libcst.tool codemod``."""
        arg_parser.add_argument(
            "--classes",
            dest="classes",
            required=True,
            help="Comma-separated qualified class names (Outer.Inner) to edit in each file.",
        )

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """Run on ``tree`` itself: trees are immutable and no metadata is read, so LibCST's
        defensive deep copy (``MetadataWrapper``'s) would only cost time."""
        wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
        previous = self.context
        with self.resolve(wrapper):
            self.context = dataclasses.replace(previous, wrapper=wrapper)
            try:
                return self.transform_module_impl(wrapper.module)
            finally:
                self.context = previous

    def on_visit(self, node: cst.CSTNode) -> bool:
        """Visit as usual, but never below a node that cannot hold a class."""
        return isinstance(node, _MAY_HOLD_CLASSES) and super().on_visit(node)

    def on_leave(
        self, original_node: _NodeT, updated_node: _NodeT
    ) -> _NodeT | cst.RemovalSentinel | cst.FlattenSentinel[_NodeT]:
        """Leave as usual; a node that cannot hold a class comes back unchanged."""
        if not isinstance(original_node, _MAY_HOLD_CLASSES):
            return updated_node
        return super().on_leave(original_node, updated_node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        """Track the qualname of the class being visited."""
        self.stack.append(node.name.value)

    def leave_ClassDef(
        self, original_node: cst.ClassDef, updated_node: cst.ClassDef
    ) -> cst.ClassDef:
        """Hand targeted classes to ``edit_class``."""
        qualname = ".".join(self.stack)
        self.stack.pop()
        if qualname not in self.targets:
            return updated_node
        self.seen.add(qualname)
        edited = self.edit_class(qualname, updated_node)
        if not edited.deep_equals(updated_node):
            self.changed.add(qualname)
        return edited

    def edit_class(self, qualname: str, node: cst.ClassDef) -> cst.ClassDef:
        """Return the edited class (the same node when nothing applies)."""
        raise NotImplementedError

    def skip(self, reason: str) -> None:
        """Record why a targeted class was left alone."""
        self.reasons.append(reason)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        """Run the edit, then turn "nothing to do" into ``SkipFile`` with the reasons."""
        result = tree.visit(self)
        if not self.changed:
            missing = [t for t in self.targets if t not in self.seen]
            why = self.reasons + ([f"class not found: {', '.join(missing)}"] if missing else [])
            raise SkipFile("; ".join(why) or "nothing to change")
        return result


def method_defs(node: cst.ClassDef) -> list[cst.FunctionDef]:
    """The ``def`` statements directly in a class body."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    return [s for s in body if isinstance(s, cst.FunctionDef)]


def blank_lines_between_methods(node: cst.ClassDef) -> int:
    """How many empty lines this class puts before a method (the file's style; 1 if unknown)."""
    counts = [
        sum(1 for line in f.leading_lines if line.comment is None) for f in method_defs(node)[1:]
    ]
    return max(set(counts), key=counts.count) if counts else 1


def docstring_quote(module: cst.Module) -> str:
    """``'''`` if the file writes its docstrings that way, else ``\"\"\"``."""
    code = module.code
    return "'''" if code.count("'''") > code.count('"""') else '"""'


def parse_method(text: str, module: cst.Module, blank_lines: int) -> cst.FunctionDef:
    """Parse generated method source (indented with the module's unit) into a class member."""
    node = cst.parse_statement(text, config=module.config_for_parsing)
    if not isinstance(node, cst.FunctionDef):
        raise TypeError("generated code is not a function definition")
    return node.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * blank_lines)


def class_body(node: cst.ClassDef) -> list[cst.BaseStatement]:
    """The statements of a class body (a one-line ``class A: pass`` becomes a list)."""
    if isinstance(node.body, cst.IndentedBlock):
        return list(node.body.body)
    small = [s for s in node.body.body if isinstance(s, cst.BaseSmallStatement)]
    return [cst.SimpleStatementLine(body=small)]


def with_body(node: cst.ClassDef, body: list[cst.BaseStatement]) -> cst.ClassDef:
    """The class with a new list of body statements, keeping its block's formatting."""
    block = node.body if isinstance(node.body, cst.IndentedBlock) else cst.IndentedBlock(body=[])
    return node.with_changes(body=block.with_changes(body=body))


def is_placeholder(stmt: cst.BaseStatement) -> bool:
    """A body that is only ``pass`` or ``...``."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    small = stmt.body[0]
    return isinstance(small, cst.Pass) or (
        isinstance(small, cst.Expr) and isinstance(small.value, cst.Ellipsis)
    )
