"""Run in the sandbox by ``fixers.evidence``: import modules whose new source is given.

Usage: ``import_probe.py REQUEST ANSWER``. REQUEST (JSON): ``{"path": [import roots], "modules":
{"pkg.mod": [path, source]}}``, the roots going first on ``sys.path``. ANSWER (JSON, written at
the end): per module ``["ok" | "failed" | "unverified", "detail"]``. Files, not stdout: a module
that prints at import must not garble the answer. Uses only the standard library.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import json
import sys
import traceback
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType


class _Overlay(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the proposed source for changed modules; every other module imports normally."""

    def __init__(self, modules: dict[str, tuple[str, str]]) -> None:
        self.modules = modules

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
        /,
    ) -> ModuleSpec | None:
        if fullname not in self.modules:
            return None
        filename = self.modules[fullname][0]
        is_pkg = filename.endswith("__init__.py")
        spec = importlib.util.spec_from_loader(fullname, self, origin=filename, is_package=is_pkg)
        if spec is not None and is_pkg:
            spec.submodule_search_locations = [filename.rsplit("/", 1)[0]]
        return spec

    def exec_module(self, module: ModuleType) -> None:
        filename, source = self.modules[module.__name__]
        module.__file__ = filename
        exec(compile(source, filename, "exec"), module.__dict__)


def _classify(exc: BaseException, changed: set[str]) -> tuple[str, str]:
    frames = traceback.extract_tb(exc.__traceback__)
    where = frames[-1].filename if frames else ""
    detail = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ImportError) and not (
        isinstance(exc, ModuleNotFoundError) and exc.name in changed
    ):
        return "unverified", f"a dependency did not import: {detail}"
    if where in changed or isinstance(exc, SyntaxError):
        return "failed", detail
    return "unverified", f"a dependency failed: {detail}"


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as stream:
        request = json.load(stream)
    for entry in reversed(request["path"]):
        sys.path.insert(0, entry)
    modules = {k: (v[0], v[1]) for k, v in request["modules"].items()}
    sys.meta_path.insert(0, _Overlay(modules))
    changed = {path for path, _ in modules.values()}
    results: dict[str, tuple[str, str]] = {}
    for name in modules:
        try:
            importlib.import_module(name)
            results[name] = ("ok", "")
        except BaseException as exc:  # report everything, including SystemExit from the module
            results[name] = _classify(exc, changed)
    with open(sys.argv[2], "w", encoding="utf-8") as stream:
        json.dump(results, stream)


if __name__ == "__main__":
    main()
