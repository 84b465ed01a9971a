"""Infer contracts from source: a base whose ``__init_subclass__`` raises ``TypeError``.

The pattern recognised::

    class Base:
        def __init_subclass__(cls, **kwargs):
            super().__init_subclass__(**kwargs)
            if "forward" in cls.__dict__:          # or: for name in ("forward",): if name in ...
                raise TypeError(...)

        def forward(self, *args, **kwargs):
            try:
                return self._forward_impl(*args, **kwargs)   # the abstract method it calls: hook
            finally:
                self._ensure_restored(attn_metadata, spec_metadata)  # restore hook + params

        @abstractmethod
        def _forward_impl(self, ...): ...
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator

from fixers.contracts.model import Contract
from fixers.sweep.pyfacts import is_abstract

# Byte strings a module must contain before it is worth parsing for inference.
INFERENCE_MARKERS: tuple[str, ...] = ("__init_subclass__", "TypeError", "__dict__")


def _raises_type_error(body: list[ast.stmt]) -> bool:
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id == "TypeError":
                return True
    return False


def _is_dict_attr(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "__dict__"


def _loop_names(loop: ast.For) -> dict[str, tuple[str, ...]]:
    """``for name in ("forward", ...)`` -> {"name": ("forward", ...)}."""
    if not isinstance(loop.target, ast.Name) or not isinstance(loop.iter, ast.Tuple | ast.List):
        return {}
    names = tuple(
        e.value for e in loop.iter.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
    )
    return {loop.target.id: names} if names else {}


def _guarded_names(func: ast.FunctionDef, loops: dict[str, tuple[str, ...]]) -> Iterator[str]:
    for node in ast.walk(func):
        if isinstance(node, ast.For):
            loops = {**loops, **_loop_names(node)}
        if not isinstance(node, ast.If) or not _raises_type_error(node.body):
            continue
        for test in ast.walk(node.test):
            if not isinstance(test, ast.Compare) or len(test.ops) != 1:
                continue
            if not isinstance(test.ops[0], ast.In) or not _is_dict_attr(test.comparators[0]):
                continue
            left = test.left
            if isinstance(left, ast.Constant) and isinstance(left.value, str):
                yield left.value
            elif isinstance(left, ast.Name):
                yield from loops.get(left.id, ())


def _self_calls(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.Call]:
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "self"
        ):
            yield node


def _restore_call(func: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Call | None:
    for node in ast.walk(func):
        if isinstance(node, ast.Try) and node.finalbody:
            wrapper = ast.Module(body=node.finalbody, type_ignores=[])
            for call in ast.walk(wrapper):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
                    owner = call.func.value
                    if isinstance(owner, ast.Name) and owner.id == "self":
                        return call
    return None


def infer_from_class(node: ast.ClassDef, module: str, path: str) -> list[Contract]:
    """Contracts declared by one class statement (empty when it has no such guard)."""
    methods = {
        s.name: s for s in node.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    guard = methods.get("__init_subclass__")
    if not isinstance(guard, ast.FunctionDef):
        return []
    abstract = {name for name, func in methods.items() if is_abstract(func)}
    contracts: list[Contract] = []
    for forbidden in dict.fromkeys(_guarded_names(guard, {})):
        func = methods.get(forbidden)
        if func is None:
            continue
        hooks = [c.func.attr for c in _self_calls(func) if isinstance(c.func, ast.Attribute)]
        hook = next((h for h in hooks if h in abstract and h != forbidden), None)
        if hook is None:
            continue
        restore = _restore_call(func)
        restore_hook = None
        params: tuple[str, ...] = ()
        if restore is not None and isinstance(restore.func, ast.Attribute):
            restore_hook = restore.func.attr
            params = tuple(a.id for a in restore.args if isinstance(a, ast.Name))
        contracts.append(
            Contract(
                name=f"{node.name}.{forbidden}",
                base=node.name,
                base_module=module or None,
                forbidden=forbidden,
                hook=hook,
                restore_hook=restore_hook,
                metadata_params=params,
                source=f"inferred from {path}:{node.lineno}",
            )
        )
    return contracts


# The nodes a class statement can be inside of: no expression holds a statement.
_HOLDERS = (ast.stmt, ast.excepthandler, ast.match_case)


def class_statements(tree: ast.Module) -> Iterator[ast.ClassDef]:
    """Every class statement of ``tree``, in ``ast.walk``'s order, without walking into
    expressions (most of a module's nodes)."""
    todo: deque[ast.AST] = deque([tree])
    while todo:
        node = todo.popleft()
        if isinstance(node, ast.ClassDef):
            yield node
        todo.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, _HOLDERS))


def infer_contracts(tree: ast.Module, module: str, path: str) -> list[Contract]:
    """Every contract declared by a top-level or nested class in ``tree``."""
    found: list[Contract] = []
    for node in class_statements(tree):
        found.extend(infer_from_class(node, module, path))
    return found
