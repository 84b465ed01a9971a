"""The examples a commit gives: each subclass it migrated, as a ``MethodEdit`` of one method.

The files the commit changed are read at the commit and at its first parent (one ``git cat-file
--batch`` for all of them) and parsed with ``ast``; a class of the commit's version whose bases
name the contract's base (or a class known to derive from it) and that existed before gives one
example when its edit concerns the method.
Files that are binary, over the size cap or do not parse are passed over, each with a note.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fixers.learned.history import blobs, changed_python_files, parent_of
from fixers.learned.rule import CommitRef, Example
from fixers.learned.signature_edit import (
    Function,
    class_edits,
    class_methods,
    code_of,
    params_of,
)
from fixers.sweep.pyfacts import FactsError, is_abstract, parse_python


@dataclass
class CommitExamples:
    """What one commit teaches: the examples, and the files it could not read."""

    commit: CommitRef
    examples: list[Example] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # What the commit did to the base's own method: "" nothing, else "made abstract",
    # "added", "renamed" or "changed"; None when not asked or the base's file is unreadable.
    base_change: str | None = None


@dataclass(frozen=True)
class BaseRef:
    """The contract's base: its class name and its file (below the history's top)."""

    name: str
    path: str


def classes_in(module: ast.Module) -> Iterator[tuple[str, ast.ClassDef]]:
    """Every class of a module with its qualname (``Outer.Inner``), nested ones included."""

    def walk(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, ast.ClassDef]]:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                qualname = f"{prefix}{stmt.name}"
                yield qualname, stmt
                yield from walk(stmt.body, f"{qualname}.")

    yield from walk(module.body, "")


def base_names(node: ast.ClassDef) -> set[str]:
    """The last dotted segment of each base (``lib.Exporter`` -> ``Exporter``)."""
    return {(code_of(b) or "").split("[", 1)[0].rsplit(".", 1)[-1] for b in node.bases}


def _parse(data: bytes | None) -> ast.Module | str:
    """The module, or why it cannot be read (binary or over the size cap; or it does not parse
    with this interpreter: a file in another Python's syntax says so, not "not Python")."""
    if data is None:
        return "binary or over the size cap"
    try:
        return parse_python(data, "<blob>")
    except FactsError as exc:
        return f"does not parse: {exc}"


def _base_change(before: ast.Module, after: ast.Module, base: str, method: str) -> str:
    """What changed about ``method`` of class ``base`` between two versions of its module."""
    old, new = _class_named(before, base), _class_named(after, base)
    if new is None:
        return "changed"
    now = class_methods(new).get(method)
    was = class_methods(old).get(method) if old is not None else None
    if was is None:
        edits = class_edits(old, new, method) if old is not None else []
        return "renamed" if edits and edits[0].old_name is not None else "added"
    if now is None:
        return "changed"
    if is_abstract(now) and not is_abstract(was):
        return "made abstract"

    def signature(function: Function) -> list[tuple[str, str, str | None]]:
        return [(p.name, p.kind, p.default) for p in params_of(function)]

    same = signature(was) == signature(now) and is_abstract(was) == is_abstract(now)
    return "" if same else "changed"


def _class_named(module: ast.Module, name: str) -> ast.ClassDef | None:
    return next((node for _, node in classes_in(module) if node.name == name), None)


def commit_examples(
    top: Path,
    commit: CommitRef,
    family: frozenset[str],
    method: str,
    base: BaseRef | None = None,
) -> CommitExamples:
    """The examples ``commit`` gives for ``method`` among classes deriving from ``family``
    (simple class names: the base and its known subclasses); with ``base``, also whether the
    commit changed the base's own ``method``."""
    found = CommitExamples(commit)
    parent = parent_of(top, commit.sha)
    changes = changed_python_files(top, commit.sha, parent) if parent else []
    wanted = [f"{commit.sha}:{c.after}" for c in changes]
    wanted += [f"{parent}:{c.before}" for c in changes if c.before]
    data = blobs(top, wanted)
    needle = method.encode()
    for change in changes:
        after_data = data.get(f"{commit.sha}:{change.after}")
        if after_data is not None and needle not in after_data:
            continue  # the method is not in this file after the commit: nothing to learn here
        after = _parse(after_data)
        before = _parse(data.get(f"{parent}:{change.before}")) if change.before else "added"
        if isinstance(after, str) or isinstance(before, str):
            if before != "added":  # a new file has no sibling to learn from: nothing to note
                why = after if isinstance(after, str) else f"before the commit, {before}"
                found.notes.append(f"{change.after} at {commit.sha[:7]}: {why}")
            continue
        if base is not None and change.after == base.path:
            found.base_change = _base_change(before, after, base.name, method)
        old = dict(classes_in(before))
        text = after_data.splitlines(keepends=True) if after_data is not None else None
        for qualname, node in classes_in(after):
            if qualname not in old or not (base_names(node) & family):
                continue
            for edit in class_edits(old[qualname], node, method, text):
                found.examples.append(Example(qualname, change.after, commit, edit))
    return found
