"""A base class from an installed library, read as source: where a contract that lives outside
the repository says what a method's signature now is.

When a library upgrade breaks a subclass and no commit of the repository migrated a sibling,
the base's own signature is the only evidence left (issue 29: "apply only what the base's
signature alone determines"). The library is never imported: its files are found on disk and
parsed with ``ast`` (importing would run the library's code, and a repository's virtualenv is
as untrusted as the repository).

Where libraries are looked for, in order: the repository's own virtualenvs (``.venv``,
``venv``, ``env`` at its top; a virtualenv reached through a symlink that leaves the repository
is refused), then the site-packages of the interpreter running repairbot.
"""

from __future__ import annotations

import ast
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from fixers.learned.signature_edit import Function, class_methods
from fixers.repo.paths import DEFAULT_MAX_FILE_BYTES, FileRefused, escape_problem, read_repo_file

VENV_NAMES = (".venv", "venv", "env")
MAX_HOPS = 8  # re-exports and base classes followed before giving up (a cycle ends here too)


@dataclass(frozen=True)
class InstalledMethod:
    """A method as an installed library defines it: the function and where it was read."""

    dotted: str  # the class it was found on, ``plugkit.core.Plugin``
    shown: str  # its file from the library root's folder on: ``site-packages/plugkit/core.py``
    function: Function

    def where(self) -> str:
        """``plugkit.core.Plugin.start (installed: site-packages/plugkit/core.py)``."""
        return f"{self.dotted}.{self.function.name} (installed: {self.shown})"


def library_roots(repo: Path) -> list[Path]:
    """The folders installed modules are looked for in, in order (see the module docstring)."""
    roots: list[Path] = []
    for name in VENV_NAMES:
        for lib in sorted((repo / name).glob("lib*/python3*/site-packages")):
            rel = lib.relative_to(repo).as_posix()
            if escape_problem(repo, rel) is None and lib.is_dir():
                roots.append(lib)
    for key in ("purelib", "platlib"):
        path = Path(sysconfig.get_paths()[key])
        if path.is_dir() and path not in roots:
            roots.append(path)
    return roots


class _Library:
    """Modules parsed from the library roots, each once."""

    def __init__(self, roots: list[Path], max_bytes: int) -> None:
        self.roots, self.max_bytes = roots, max_bytes
        self.parsed: dict[str, tuple[str, ast.Module] | None] = {}

    def module(self, dotted: str) -> tuple[str, ast.Module] | None:
        """The shown path and tree of module ``dotted``, or None (absent or unreadable)."""
        if dotted not in self.parsed:
            self.parsed[dotted] = self._find(dotted)
        return self.parsed[dotted]

    def _find(self, dotted: str) -> tuple[str, ast.Module] | None:
        parts = dotted.split(".")
        if not all(p.isidentifier() for p in parts):
            return None
        for root in self.roots:
            for rel in ("/".join(parts) + ".py", "/".join(parts) + "/__init__.py"):
                try:
                    data = read_repo_file(root, rel, self.max_bytes)
                except (OSError, FileRefused):
                    continue
                try:
                    return f"{root.name}/{rel}", ast.parse(data)
                except (SyntaxError, ValueError):
                    return None
        return None


def _bindings(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
    """The dotted names a module's top-level imports bind."""
    out: dict[str, str] = {}
    package = module if is_package else module.rpartition(".")[0]
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                source = ".".join([*anchor, source] if source else anchor)
            for alias in node.names:
                out[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                out[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
    return out


def installed_method(
    repo: Path, dotted_class: str, method: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> InstalledMethod | None:
    """``method`` as the installed class ``dotted_class`` defines or inherits it (following
    re-exports and base classes inside the library), or None when it cannot be read."""
    library = _Library(library_roots(repo), max_bytes)
    queue = [dotted_class]
    for _ in range(MAX_HOPS):
        if not queue:
            return None
        dotted = queue.pop(0)
        module, _, name = dotted.rpartition(".")
        found = library.module(module) if module else None
        if found is None:
            continue
        shown, tree = found
        bindings = _bindings(tree, module, shown.endswith("/__init__.py"))
        node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)
        if node is None:
            if name in bindings:  # re-exported: ``from .core import Plugin``
                queue.append(bindings[name])
            continue
        function = class_methods(node).get(method)
        if function is not None:
            return InstalledMethod(dotted, shown, function)
        for base in node.bases:
            text = ast.unparse(base)
            head, _, rest = text.partition(".")
            resolved = bindings.get(head, f"{module}.{head}")
            queue.append(f"{resolved}.{rest}" if rest else resolved)
    return None
