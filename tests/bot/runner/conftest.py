"""Tiny real target repositories for the runner: a bug, its fix, and patches that go wrong."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.git import commit_all, git

OPS_BUGGY = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
OPS_FIXED = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
OPS_BREAKS_SUB = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n"
OPS_NOT_FIXED = (
    "def add(a, b):\n    # looked at it\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
)
TESTS = {
    "tests/test_ops.py": "from calc.ops import add, sub\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\n"
    "def test_sub():\n    assert sub(3, 1) == 2\n",
    "tests/test_other.py": "def test_unrelated():\n    assert True\n",
}


@dataclass(frozen=True)
class TinyRepo:
    path: Path
    base: str

    def commit(self, files: dict[str, str], message: str = "patch") -> str:
        """A commit on top of the base (a fresh branch each time)."""
        branch = f"b{len(git(self.path, 'branch', '--list').splitlines())}"
        git(self.path, "checkout", "--quiet", "-b", branch, self.base)
        for name, text in files.items():
            (self.path / name).parent.mkdir(parents=True, exist_ok=True)
            (self.path / name).write_text(text)
        head = commit_all(self.path, message)
        git(self.path, "checkout", "--quiet", "main")
        return head


@pytest.fixture
def tiny_repo(tmp_path: Path) -> TinyRepo:
    repo = tmp_path / "tiny"
    files = {
        "calc/__init__.py": "",
        "calc/ops.py": OPS_BUGGY,
        "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["."]\n',
        **TESTS,
    }
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "init", "--quiet", "--initial-branch", "main")
    return TinyRepo(repo, commit_all(repo, "buggy calc"))
