"""Which files of a repository the sweep looks at, and the module name each one has."""

from __future__ import annotations

import fnmatch
import os
import subprocess
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

SKIP_DIRS = frozenset({"__pycache__", "node_modules", "venv", "site-packages", "build", "dist"})


@dataclass(frozen=True)
class SourceFile:
    """One Python file: path relative to the root, module name, whether it is a package."""

    rel: str
    module: str
    is_package: bool


def _git_files(root: Path) -> list[str] | None:
    """Tracked ``*.py`` files under ``root`` (relative to it); None when ``root`` is not in git."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--", "*.py"],
            capture_output=True,
            check=False,
            timeout=120,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    names = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    prefix = os.path.join(root, "")
    return sorted(n for n in names if n and os.path.isfile(prefix + n))


def _walk_files(root: Path) -> list[str]:
    """Every ``*.py`` file under ``root`` as ``os.walk`` finds it (a linked folder is not
    entered), skipping hidden folders and ``SKIP_DIRS``; one ``scandir`` per folder."""
    found: list[str] = []
    todo = [("", os.fspath(root))]
    while todo:
        rel_dir, folder = todo.pop()
        try:
            with os.scandir(folder) as scan:
                entries = list(scan)
        except OSError:
            continue
        for entry in entries:
            if _is_dir(entry):
                name = entry.name
                if not name.startswith(".") and name not in SKIP_DIRS and not _is_link(entry):
                    todo.append((f"{rel_dir}{name}/", entry.path))
            elif entry.name.endswith(".py"):
                found.append(rel_dir + entry.name)
    return sorted(found)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def list_python_files(root: Path, exclude: tuple[str, ...] = ()) -> tuple[list[str], str]:
    """The Python files to index and how they were found (``git ls-files`` or a directory walk)."""
    tracked = _git_files(root)
    if tracked:
        files, how = tracked, "git ls-files"
    else:  # not a git work tree, or nothing tracked here (an ignored or new directory)
        files, how = _walk_files(root), "walk"
    if exclude:
        files = [f for f in files if not any(fnmatch.fnmatch(f, pat) for pat in exclude)]
    return files, how


def _outer_package(root: Path) -> list[str]:
    """Package names above ``root`` when ``root`` itself sits inside a package."""
    names: list[str] = []
    here = root.resolve()
    while (here / "__init__.py").is_file() and here.parent != here:
        names.append(here.name)
        here = here.parent
    return list(reversed(names))


def module_names(root: Path, files: list[str]) -> list[SourceFile]:
    """Dotted module names for ``files``: the ``__init__.py`` directories above each file."""
    file_set = set(files)
    outer = _outer_package(root)
    prefix = os.path.join(root, "")
    # folder -> (the package names of its innermost run of __init__.py folders, whether that
    # run reaches the root), each folder looked at once
    packages: dict[str, tuple[tuple[str, ...], bool]] = {"": ((), True)}

    def package(folder: str) -> tuple[tuple[str, ...], bool]:
        found = packages.get(folder)
        if found is None:
            init = f"{folder}/__init__.py"
            if init in file_set or os.path.isfile(prefix + init):
                parent, _, name = folder.rpartition("/")
                chain, reached = package(parent)
                found = ((*chain, name), reached)
            else:
                found = ((), False)
            packages[folder] = found
        return found

    out: list[SourceFile] = []
    for rel in files:
        folder, _, name = rel.rpartition("/")
        chain, reached_root = package(folder)
        stem = name[:-3]
        is_package = stem == "__init__"
        names = [*(outer if reached_root else ()), *chain]
        if not is_package:
            names.append(stem)
        out.append(SourceFile(rel=rel, module=".".join(names), is_package=is_package))
    return out


def module_map(files: Collection[SourceFile]) -> dict[str, str]:
    """Module name -> file: the name the ``__init__.py`` chain gives each file, and for files in
    namespace packages (folders without ``__init__.py``, PEP 420) also the dotted name they are
    imported by from the repository root, or from ``src/``."""
    out = {f.module: f.rel for f in files}
    for f in files:
        parts = f.rel[:-3].split("/")
        if parts[-1] == "__init__":
            parts.pop()
        if not parts:
            continue
        for dotted in (".".join(parts), ".".join(parts[1:]) if parts[0] == "src" else ""):
            if dotted and dotted != f.module and dotted.replace(".", "").isidentifier():
                out.setdefault(dotted, f.rel)
    return out


def is_test_path(rel: str, test_dirs: tuple[str, ...]) -> bool:
    """Whether a file is test code: under a test directory or named like a pytest module."""
    parts = rel.split("/")
    name = parts[-1]
    if name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py"):
        return True
    return any(part in test_dirs for part in parts[:-1]) or any(
        rel.startswith(d.rstrip("/") + "/") for d in test_dirs if "/" in d
    )
