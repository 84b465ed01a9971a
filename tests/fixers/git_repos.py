"""Small real git repositories holding a SpecWorkerBase hierarchy, for the check's tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

BASE = (
    "class SpecWorkerBase:\n"
    "    def forward(self, x):\n"
    "        return self._forward_impl(x)\n"
    "\n"
    "    def _forward_impl(self, x):\n"
    "        raise NotImplementedError\n"
)
GOOD = "from pkg.base import SpecWorkerBase\n\n\nclass {name}(SpecWorkerBase):\n    def _forward_impl(self, x):\n        return x\n"
BAD = "from pkg.base import SpecWorkerBase\n\n\nclass {name}(SpecWorkerBase):\n    def forward(self, x):\n        return x\n"
# Only the variables that make commits reproducible; the rest of the environment is the test's.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo``; stdout (fails the test on a non-zero exit)."""
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **GIT_ENV},
        check=False,
    )
    assert proc.returncode == 0, f"git {args}: {proc.stderr}"
    return proc.stdout


def write(repo: Path, rel: str, text: str) -> Path:
    """Write ``rel`` below ``repo`` (directories created)."""
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def commit_all(repo: Path, message: str = "change") -> str:
    """Stage everything and commit (hooks skipped); the new commit's SHA."""
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "--no-verify", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def worker_repo(root: Path, *, old_violation: bool = True) -> Path:
    """A repository on ``main`` with ``pkg/base.py``, a good worker and (optionally) a worker
    that already overrides ``forward`` at the first commit."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "--quiet", "--initial-branch=main")
    write(root, "pkg/__init__.py", "")
    write(root, "pkg/base.py", BASE)
    write(root, "pkg/good.py", GOOD.format(name="GoodWorker"))
    if old_violation:
        write(root, "pkg/old.py", BAD.format(name="OldWorker"))
    commit_all(root, "base")
    return root
