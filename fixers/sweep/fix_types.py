"""Types for a generated restore-hook override, taken from the repository (never bare ``object``).

For each metadata parameter, in order: the implementation method's own annotation; the base's
restore hook, ``forward`` or hook annotation; else a class the base's module defines or imports
whose name matches the parameter (``attn_metadata`` -> ``AttentionMetadata``, ``spec_metadata``
-> ``SpecMetadata``). A type the worker's module does not bind yet is imported under
``if TYPE_CHECKING:`` (the annotation is then quoted).
"""

from __future__ import annotations

import ast
import re

from fixers.learned.signature_edit import Function
from fixers.state.trace import find_class
from fixers.sweep.index import Hierarchy, RepoIndex

_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def _strip_optional(node: ast.expr | None) -> ast.expr | None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        for side in (node.left, node.right):
            if not (isinstance(side, ast.Constant) and side.value is None):
                return side
    if isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("Optional"):
        return node.slice
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _strip_optional(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return None
    return node


def class_method(index: RepoIndex, rel: str, qualname: str, name: str) -> Function | None:
    """The ``def``/``async def name`` directly in class ``qualname`` of ``rel``, if any."""
    tree = index.tree(rel)
    cls = find_class(tree, qualname) if tree is not None else None
    if cls is None:
        return None
    found = [
        s
        for s in cls.body
        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == name
    ]
    return found[0] if found else None


def base_method(index: RepoIndex, hierarchy: Hierarchy, name: str) -> tuple[str, Function] | None:
    """Where the contract's base declares method ``name``: its file and ``def``."""
    for base in sorted(hierarchy.bases):
        rel, cls = index.classes.get(base, (None, None))
        if rel is not None and cls is not None:
            found = class_method(index, rel, cls.qualname, name)
            if found is not None:
                return rel, found
    return None


def _param_annotation(func: Function | None, param: str) -> ast.expr | None:
    if func is None:
        return None
    args = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
    return _strip_optional(next((a.annotation for a in args if a.arg == param), None))


def _abbreviates(part: str, word: str) -> bool:
    """``attn`` abbreviates ``attention``: same first letter, the rest in order."""
    if not part or part[0] != word[:1]:
        return False
    letters = iter(word)
    return all(ch in letters for ch in part)


def matches_param(param: str, class_name: str) -> bool:
    """``attn_metadata`` ~ ``AttentionMetadata``: same word count, each word abbreviated."""
    words = [w.lower() for w in _WORDS.findall(class_name)]
    parts = [p for p in param.lower().split("_") if p]
    return len(words) == len(parts) and all(
        _abbreviates(p, w) for p, w in zip(parts, words, strict=True)
    )


def type_checking_only(tree: ast.Module) -> set[str]:
    """Names a module binds only under ``if TYPE_CHECKING:`` (unusable at run time)."""
    guarded: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and ast.unparse(stmt.test).endswith("TYPE_CHECKING"):
            for node in ast.walk(stmt):
                if isinstance(node, ast.ImportFrom | ast.Import):
                    guarded |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return guarded


def _by_name(index: RepoIndex, module: str, param: str) -> str | None:
    """A class the module defines or imports whose name matches ``param``, fully qualified."""
    facts = index.module_facts(module)
    if facts is None:
        return None
    names = [c.qualname for c in facts.classes if not c.nested]
    names += [local for local, _ in facts.bindings]
    found = sorted(n for n in names if matches_param(param, n))
    return index.resolve(module, found[0]) if found else None


def hook_annotations(
    index: RepoIndex, hierarchy: Hierarchy, class_qualname: str, rel: str, method: str
) -> tuple[list[str], list[str]]:
    """``param=Type`` entries and ``module:Name`` TYPE_CHECKING imports for the restore hook."""
    contract = hierarchy.contract
    member = hierarchy.members[class_qualname]
    own = class_method(index, rel, member.facts.qualname, method)
    facts = index.facts.get(rel)
    bound: dict[str, str] = {}
    if facts is not None:
        bound = {local: index.resolve(member.module, local) for local, _ in facts.bindings}
        bound |= {c.qualname: index.resolve(member.module, c.qualname) for c in facts.classes}
    base = next(iter(sorted(hierarchy.bases)), None)
    base_rel, base_cls = index.classes.get(base or "", (None, None))
    base_methods = [
        class_method(index, base_rel, base_cls.qualname, name)
        for name in (contract.restore_hook or "", contract.forbidden, contract.hook)
        if base_rel and base_cls
    ]
    entries: list[str] = []
    imports: list[str] = []
    for param in contract.metadata_params:
        node = _param_annotation(own, param)
        if node is not None:
            entries.append(f"{param}={ast.unparse(node)}")
            continue
        if base_rel is None:
            continue
        base_module = index.files[base_rel].module
        target = None
        for func in base_methods:
            node = _param_annotation(func, param)
            if isinstance(node, ast.Name | ast.Attribute):
                target = index.resolve(base_module, ast.unparse(node))
                break
        target = target or _by_name(index, base_module, param)
        if target is None:
            continue
        local = next((k for k, q in bound.items() if q == target), None)
        if local is not None:
            entries.append(f"{param}={local}")
        elif "." in target:
            module, _, cls_name = target.rpartition(".")
            entries.append(f"{param}={cls_name}")
            imports.append(f"{module}:{cls_name}")
    return entries, imports
