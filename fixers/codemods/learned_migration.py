"""Apply a learned migration (``fixers.learned``) to the subclasses its commit missed.

Two edits, both learned from the siblings the contract commit migrated:

* the signature edit: rename the method (``old`` -> ``new``) and add, drop, re-default or
  reorder parameters as the siblings did. Only the name token and the parameter list change:
  decorators, comments, the body and the return annotation stay byte for byte (inside a renamed
  method ``super().old(`` becomes ``super().new(``: the base no longer has ``old``);
* a stub for a test double that lacks a new abstract method: the base's signature, with a body
  that raises ``NotImplementedError``, appended to the class.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import libcst as cst
import libcst.matchers as m
from libcst.codemod import CodemodContext

from fixers.codemods._common import ClassTargetCommand
from fixers.codemods._type_imports import parse_imports, with_type_checking_imports
from fixers.codemods.examples import Example
from fixers.codemods.parameter_edits import NotLearnable, edit_parameters
from fixers.codemods.registry import CodemodSpec, PlanContext, Step
from fixers.learned.signature_edit import Param
from fixers.sweep.index import Hierarchy
from fixers.sweep.outcome import Skip
from fixers.sweep.violation_types import Violation

DESCRIPTION = "Apply the migration a contract commit made to its subclasses to the ones it missed."
ParamSpec = Sequence[str | int | None]  # (name, kind, default, annotation[, position]): JSON


class _SuperCallRenamer(cst.CSTTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.Attribute:
        if updated_node.attr.value == self.old and m.matches(
            updated_node.value, m.Call(func=m.Name("super"))
        ):
            return updated_node.with_changes(attr=cst.Name(self.new))
        return updated_node


def _param(spec: ParamSpec) -> Param:
    name, kind, default, annotation, position = (list(spec) + [None] * 5)[:5]
    return Param(str(name), kind, default, annotation, position)  # type: ignore[arg-type]


class LearnedMigrationCommand(ClassTargetCommand):
    """Rename and re-parameterise (or stub) one method in the targeted classes."""

    DESCRIPTION: str = DESCRIPTION

    def __init__(
        self,
        context: CodemodContext,
        classes: str | Sequence[str] | None = None,
        new: str = "",
        old: str | None = None,
        added: Sequence[ParamSpec] = (),
        removed: Sequence[str] = (),
        changed: Sequence[ParamSpec] = (),
        stub: str = "",
        stub_imports: Sequence[str] = (),
        order: Sequence[str] = (),
    ) -> None:
        super().__init__(context, classes)
        self.new, self.old = new, old or new
        self.added = [_param(p) for p in added]
        self.removed = list(removed)
        self.redefaulted = [_param(p) for p in changed]
        self.order = list(order)
        self.stub = stub
        self.stub_imports = parse_imports(stub_imports)

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        """Options for ``python -m libcst.tool codemod`` (renames only from the command line)."""
        ClassTargetCommand.add_args(arg_parser)
        arg_parser.add_argument("--new", required=True)
        arg_parser.add_argument("--old", default=None)

    def edit_class(self, qualname: str, node: cst.ClassDef) -> cst.ClassDef:
        """Edit the method in place, or append the stub."""
        body = node.body
        if not isinstance(body, cst.IndentedBlock):
            self.skip(f"{qualname}: one-line class body")
            return node
        names = {s.name.value for s in body.body if isinstance(s, cst.FunctionDef)}
        if self.stub:
            if self.new in names:
                self.skip(f"{qualname}: already defines {self.new}")
                return node
            stub = cst.parse_statement(self.stub).with_changes(
                leading_lines=[cst.EmptyLine(indent=False)]
            )
            return node.with_changes(body=body.with_changes(body=[*body.body, stub]))
        if self.old not in names:
            self.skip(f"{qualname}: no {self.old} to migrate")
            return node
        if self.old != self.new and self.new in names:
            self.skip(f"{qualname}: defines both {self.old} and {self.new}")
            return node
        statements: list[cst.BaseStatement] = []
        for stmt in body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == self.old:
                stmt = self._migrate(qualname, stmt)
            statements.append(stmt)
        return node.with_changes(body=body.with_changes(body=statements))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        """Import what a stub's annotations name under ``if TYPE_CHECKING:``."""
        if not self.changed or not self.stub:
            return updated_node
        return with_type_checking_imports(
            updated_node, self.stub_imports, self.module.default_indent
        )

    def _migrate(self, qualname: str, function: cst.FunctionDef) -> cst.FunctionDef:
        try:
            params = edit_parameters(
                function.params, self.added, self.removed, self.redefaulted, self.order
            )
        except (NotLearnable, cst.CSTValidationError) as exc:
            self.skip(f"{qualname}.{self.old}: {exc}")
            return function
        migrated = function.with_changes(name=function.name.with_changes(value=self.new))
        if params.deep_equals(function.params):
            params = function.params  # untouched: keep the very node (and its formatting)
        migrated = migrated.with_changes(params=params)
        if self.old != self.new:
            migrated = migrated.visit(_SuperCallRenamer(self.old, self.new))  # type: ignore[assignment]
        return migrated


def plan_step(context: PlanContext, hierarchy: Hierarchy, v: Violation) -> Step | Skip:
    """The step for one ``learned-migration`` violation (its rule rides on the violation)."""
    rule = v.rule
    if rule is None:
        return Skip(v.path, f"{v.class_qualname}: no learned rule", v.class_qualname)
    member = hierarchy.members[v.class_qualname]

    def spec(p: Param) -> list[str | int | None]:
        return [p.name, p.kind, p.default_text, p.annotation_text, p.position]

    options: dict[str, object] = {
        "classes": [member.facts.qualname],
        "new": rule.method,
        "old": rule.old_name,
        "added": [spec(p) for p in rule.added],
        "removed": list(rule.removed),
        "changed": [spec(p) for p in rule.changed],
        "order": list(rule.order),
        "stub": v.stub,
        "stub_imports": list(v.stub_imports),
    }
    return CODEMOD.step(options, (member.facts.qualname,))


_RENAME: dict[str, object] = {
    "classes": ["ParquetSink"],
    "old": "export",
    "new": "emit",
    "added": [["sink", "keyword-only", "None", None]],
}

EXAMPLES: tuple[Example, ...] = (
    Example(
        "rename and a new keyword-only parameter; decorator, comments and body kept",
        before="""
class ParquetSink(Sink):
    # columnar output
    @traced("parquet")
    def export(self, record):
        return  write(record)   # odd spacing kept
""",
        after="""
class ParquetSink(Sink):
    # columnar output
    @traced("parquet")
    def emit(self, record, *, sink=None):
        return  write(record)   # odd spacing kept
""",
        args=_RENAME,
    ),
    Example(
        "black-style signature keeps its trailing comma and line breaks",
        before="""
class ParquetSink(Sink):
    def export(
        self,
        record: Record,
    ) -> None:
        super().export(record)
""",
        after="""
class ParquetSink(Sink):
    def emit(
        self,
        record: Record,
        *,
        sink=None,
    ) -> None:
        super().emit(record)
""",
        args=_RENAME,
    ),
    Example(
        "a new parameter the base now passes, with the siblings' default",
        before="""
class Gauge(Meter):
    def sample(self, value, *, unit="s"):
        return value
""",
        after="""
class Gauge(Meter):
    def sample(self, value, *, unit="s", labels: dict | None = None):
        return value
""",
        args={
            "classes": ["Gauge"],
            "new": "sample",
            "added": [["labels", "keyword-only", "None", "dict | None"]],
        },
    ),
    Example(
        "a positional parameter the siblings put first goes first, not last",
        before="""
class FormParser(Parser):
    def request_of(self, args, kwargs):
        return args[0]
""",
        after="""
class FormParser(Parser):
    def request_of(self, view, args, kwargs):
        return args[0]
""",
        args={
            "classes": ["FormParser"],
            "new": "request_of",
            "added": [["view", "positional", None, None, 1]],
        },
    ),
    Example(
        "parameters the siblings swapped are swapped, each with its own annotation",
        before="""
class MailNotifier(Notifier):
    def send(self, title: str, body: str = ""):
        return body
""",
        after="""
class MailNotifier(Notifier):
    def send(self, body: str = "", title: str = ""):
        return body
""",
        args={
            "classes": ["MailNotifier"],
            "new": "send",
            "changed": [["title", "positional", '""', "str"]],
            "order": ["self", "body", "title"],
        },
    ),
    Example(
        "an edit that would put a parameter without a default after one with: skipped",
        before="""
class MailNotifier(Notifier):
    def send(self, title, body):
        return body
""",
        after=None,
        args={
            "classes": ["MailNotifier"],
            "new": "send",
            "changed": [["title", "positional", '""', None]],
        },
        skip_reason="body has no default but would follow title, which has one",
    ),
    Example(
        "a test double gets a stub of the new abstract method",
        before="""
class FakeStore(Store):
    def get(self, key):
        return None
""",
        after="""
class FakeStore(Store):
    def get(self, key):
        return None

    def scan(self, prefix: str) -> list[str]:
        raise NotImplementedError
""",
        args={
            "classes": ["FakeStore"],
            "new": "scan",
            "stub": "def scan(self, prefix: str) -> list[str]:\n    raise NotImplementedError\n",
        },
    ),
    Example(
        "already migrated: skipped with the reason",
        before="""
class ParquetSink(Sink):
    def emit(self, record, *, sink=None):
        return record
""",
        after=None,
        args=_RENAME,
        skip_reason="no export to migrate",
    ),
)

CODEMOD = CodemodSpec(
    name="learned_migration",
    fix="learned",
    kinds=("learned-migration",),
    fixer="learn-migration",
    command=LearnedMigrationCommand,
    build_step=plan_step,
    order=5,
    description=DESCRIPTION,
    examples=EXAMPLES,
)
