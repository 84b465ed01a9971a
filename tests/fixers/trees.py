"""Reading a fixture tree as its Python files, for golden comparisons."""

from __future__ import annotations

from pathlib import Path


def python_files(root: Path) -> dict[str, bytes]:
    """Every ``*.py`` below ``root`` (caches excluded), by relative path."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*.py"))
        if "__pycache__" not in p.parts
    }
