"""Which files a sweep looks at outside git, and the module name each one gets."""

from __future__ import annotations

from pathlib import Path

from fixers.repo.files import list_python_files, module_names


def _touch(root: Path, *rels: str) -> None:
    for rel in rels:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")


def test_the_walk_skips_hidden_and_tool_folders_and_linked_folders(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _touch(root, "a.py", "pkg/b.py", "pkg/notes.txt", ".hidden/c.py", "venv/d.py")
    _touch(root, "pkg/__pycache__/e.py", "node_modules/f.py", "deep/er/g.py")
    _touch(tmp_path, "outside/h.py")
    (root / "linked").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / "pkg" / "alias.py").symlink_to(root / "a.py")
    (root / "dangling.py").symlink_to(root / "missing.py")
    files, how = list_python_files(root)
    assert how == "walk"
    assert files == ["a.py", "dangling.py", "deep/er/g.py", "pkg/alias.py", "pkg/b.py"]


def test_module_names_follow_the_init_files_up_to_the_first_gap(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _touch(root, "top.py", "pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/m.py")
    _touch(root, "gap/inner/__init__.py", "gap/inner/n.py", "pkg/plain/o.py")
    files = list_python_files(root)[0]
    assert {f.rel: (f.module, f.is_package) for f in module_names(root, files)} == {
        "gap/inner/__init__.py": ("inner", True),
        "gap/inner/n.py": ("inner.n", False),
        "pkg/__init__.py": ("pkg", True),
        "pkg/plain/o.py": ("o", False),
        "pkg/sub/__init__.py": ("pkg.sub", True),
        "pkg/sub/m.py": ("pkg.sub.m", False),
        "top.py": ("top", False),
    }


def test_a_root_inside_a_package_keeps_the_outer_names(tmp_path: Path) -> None:
    _touch(tmp_path, "outer/__init__.py", "outer/root/__init__.py", "outer/root/m.py")
    _touch(tmp_path, "outer/root/loose/x.py")
    root = tmp_path / "outer" / "root"
    files = list_python_files(root)[0]
    assert [f.module for f in module_names(root, files)] == ["outer.root", "x", "outer.root.m"]
