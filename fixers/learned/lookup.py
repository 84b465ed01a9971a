"""Questions the engine asks of the tree at the failing commit: a class's parents and base, a
method's ``ast`` and parameters, whether a file is test code."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from fixers.learned.signature_edit import Function
from fixers.sweep.index import Member, RepoIndex


def parents_of(index: RepoIndex, qualname: str) -> list[str]:
    """The fully qualified parents of a class, parsing the modules they are defined in."""
    rel, cls = index.classes[qualname]
    module = index.files[rel].module
    out: list[str] = []
    for name in cls.bases:
        resolved = index.resolve(module, name)
        parts = resolved.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            where = index.by_module.get(".".join(parts[:cut]))
            if where is not None and where not in index.facts:
                index.parse(where)
                resolved = index.canonical(index.resolve(module, name))
                break
        out.append(resolved)
    return out


def member_of(index: RepoIndex, qualname: str) -> Member:
    """The indexed class ``qualname`` as a ``Member`` (what ``class_function`` reads)."""
    rel, facts = index.classes[qualname]
    return Member(qualname, index.files[rel].module, rel, facts, (), False)


def find_base(
    index: RepoIndex, qualname: str, method: str, *, caller: bool = False
) -> tuple[str, str | None]:
    """The base ``qualname`` broke against: the farthest repository ancestor that defines
    ``method`` (qualified name, file), else the first ancestor outside the repository (its
    dotted name as the imports resolve it, no file). ``caller``: a call that no longer fits
    the override broke it, so the nearest ancestor that makes that call (``self.method(``)
    comes first: an older interface above it that only declares ``method`` is not where the
    contract changed."""
    found: tuple[str, str | None] | None = None
    calling: tuple[str, str | None] | None = None
    outside: str | None = None
    seen: set[str] = set()
    queue = [qualname]
    while queue:
        current = queue.pop(0)
        for parent in parents_of(index, current):
            if parent in seen:
                continue
            seen.add(parent)
            if parent not in index.classes:
                name = parent.rsplit(".", 1)[-1]
                if outside is None and name not in {"object", "ABC", "Generic", "Protocol"}:
                    outside = parent
                continue
            rel, facts = index.classes[parent]
            if method in facts.methods:
                found = (parent, rel)
            if caller and calling is None and calls_own(index, member_of(index, parent), method):
                calling = (parent, rel)
            queue.append(parent)
    if calling is not None:
        return calling
    if found is not None:
        return found
    return (outside or ""), None


def calls_own(index: RepoIndex, member: Member, method: str) -> bool:
    """Whether a method of ``member``'s class calls ``self.method(...)``."""
    node = class_node(index, member)
    return node is not None and any(
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == method
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "self"
        for call in ast.walk(node)
    )


def in_test_dir(rel: str, test_dirs: Iterable[str]) -> bool:
    """Whether ``rel`` is test code: under a test dir, a ``test_*.py`` or a ``conftest.py``."""
    parts = rel.split("/")
    name = parts[-1]
    return (
        any(d in parts[:-1] for d in test_dirs) or name.startswith("test_") or name == "conftest.py"
    )


def class_node(index: RepoIndex, member: Member) -> ast.ClassDef | None:
    """``member``'s ``class`` statement, from the index's ``ast``."""
    tree = index.tree(member.rel)
    if tree is None:
        return None
    body: list[ast.stmt] = tree.body
    node: ast.ClassDef | None = None
    for part in member.facts.qualname.split("."):
        node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
        if node is None:
            return None
        body = node.body
    return node


def class_function(index: RepoIndex, member: Member, name: str) -> Function | None:
    """The ``def``/``async def name`` directly in ``member``'s class body, from the index's
    ``ast``."""
    node = class_node(index, member)
    if node is None:
        return None
    return next(
        (
            n
            for n in node.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name
        ),
        None,
    )


def arg_names(function: Function) -> tuple[set[str], bool]:
    """The names a function takes, and whether it takes ``**kwargs``."""
    a = function.args
    names = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    return names, a.kwarg is not None
