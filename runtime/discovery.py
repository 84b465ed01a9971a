"""Find the SpecWorkerBase subclasses of a package: the worker list is discovered, never written.

`discover_workers(package)` imports the package by module path, walks its modules (skipping
`test*`, `conftest` and `tests` modules) and returns every `SpecWorkerBase` subclass defined there,
in import order. The conformance suite, the runtime's tests and `bench/runtime.py` all take their
workers from it, so a new worker is one new module in `runtime/speculative/` (plus its test).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import pkgutil
import sys
import types
from collections.abc import Iterator

from runtime.speculative.interface import SpecWorkerBase, contract_guard_disabled

DEFAULT_PACKAGE = "runtime.speculative"


def _skip_module(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last.startswith("test") or last in ("conftest", "tests")


@contextlib.contextmanager
def _import_context(paths: tuple[str, ...], guard: bool) -> Iterator[None]:
    for p in reversed(paths):
        if p not in sys.path:
            sys.path.insert(0, p)
    with contextlib.ExitStack() as stack:
        if not guard:
            stack.enter_context(contract_guard_disabled())
        yield


def discover_workers(
    package: str, *, paths: tuple[str, ...] = (), guard: bool = True
) -> list[type[SpecWorkerBase]]:
    """Every SpecWorkerBase subclass defined in `package` or its submodules, in import order.

    `paths` are prepended to `sys.path`; `guard=False` imports with the class-creation guard off
    (pre-contract code). Import errors propagate: a package that cannot be imported fails.
    """
    with _import_context(paths, guard):
        root = importlib.import_module(package)
        modules: list[types.ModuleType] = [root]
        if hasattr(root, "__path__"):
            for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
                if not _skip_module(info.name):
                    modules.append(importlib.import_module(info.name))
    found: list[type[SpecWorkerBase]] = []
    for module in modules:
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, SpecWorkerBase)
                and obj is not SpecWorkerBase
                and obj.__module__ == module.__name__
                and obj not in found
            ):
                found.append(obj)
    return found
