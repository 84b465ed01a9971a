"""A real pre-commit (from PyPI) in a real git repository runs the hooks we ship.

How the hooks get there: the hook definitions are loaded from this checkout's
``.pre-commit-hooks.yaml`` (and the file is validated by ``pre-commit validate-manifest``) and put
into the test repository's ``.pre-commit-config.yaml`` as a ``repo: local`` hook, unchanged but
for ``language: system``, with this virtualenv first on PATH. The shipped ``language: python``
makes pre-commit build a virtualenv and ``pip install`` repairbot into it, torch included:
installing the torch wheel alone from the local wheel cache took 34 s and 786 MB (measured for
this test), once per test run, and a cold machine without the cache would need the network. The
hook's id, entry, file types and ``pass_filenames`` are what the user gets; only how pre-commit
finds ``repairbot`` differs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixers.git_repos import BAD, GIT_ENV, GOOD, commit_all, worker_repo, write

pytestmark = pytest.mark.e2e

CHECKOUT = Path(__file__).resolve().parents[2]
MANIFEST = CHECKOUT / ".pre-commit-hooks.yaml"
BIN = Path(sys.executable).parent


def _shipped_hook(hook_id: str) -> dict[str, Any]:
    hooks = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    (hook,) = [h for h in hooks if h["id"] == hook_id]
    return dict(hook)


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    return {
        **env,
        **GIT_ENV,
        "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
    }


def _run(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), cwd=repo, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _repo_with_hook(tmp_path: Path, hook_id: str) -> tuple[Path, dict[str, str]]:
    """A worker repository whose pre-commit config holds the shipped hook, installed."""
    env = _env(tmp_path)
    repo = worker_repo(tmp_path / "repo")
    hook = {**_shipped_hook(hook_id), "language": "system"}
    config = {"repos": [{"repo": "local", "hooks": [hook]}]}
    write(repo, ".pre-commit-config.yaml", yaml.safe_dump(config, sort_keys=False))
    commit_all(repo, "pre-commit config")
    installed = _run(repo, env, str(BIN / "pre-commit"), "install")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return repo, env


def test_the_shipped_manifest_is_valid_and_says_what_the_docs_say() -> None:
    proc = subprocess.run(
        [str(BIN / "pre-commit"), "validate-manifest", str(MANIFEST)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check = _shipped_hook("repairbot-check")
    assert (check["entry"], check["language"]) == ("repairbot check", "python")
    assert check["types"] == ["python"] and check["pass_filenames"] is False
    assert _shipped_hook("repairbot-fix")["entry"] == "repairbot check --fix"


def test_a_commit_adding_a_violation_is_blocked_until_check_fix(tmp_path: Path) -> None:
    repo, env = _repo_with_hook(tmp_path, "repairbot-check")
    write(repo, "pkg/new.py", BAD.format(name="NewWorker"))
    assert _run(repo, env, "git", "add", "pkg/new.py").returncode == 0

    blocked = _run(repo, env, "git", "commit", "-m", "add NewWorker")
    assert blocked.returncode != 0
    output = blocked.stdout + blocked.stderr
    assert "repairbot check" in output and "Failed" in output
    assert "pkg/new.py:5: forbidden-override (rename)" in output
    assert _run(repo, env, "git", "rev-list", "--count", "HEAD").stdout.strip() == "2"

    fixed = _run(repo, env, str(BIN / "repairbot"), "check", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert _run(repo, env, "git", "add", "pkg/new.py").returncode == 0
    passed = _run(repo, env, "git", "commit", "-m", "add NewWorker")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout + passed.stderr
    committed = _run(repo, env, "git", "show", "HEAD:pkg/new.py").stdout
    assert committed == GOOD.format(name="NewWorker")


def test_the_fix_hook_rewrites_the_file_and_the_next_commit_passes(tmp_path: Path) -> None:
    repo, env = _repo_with_hook(tmp_path, "repairbot-fix")
    old = (repo / "pkg" / "old.py").read_bytes()
    write(repo, "pkg/new.py", BAD.format(name="NewWorker"))
    assert _run(repo, env, "git", "add", "pkg/new.py").returncode == 0

    first = _run(repo, env, "git", "commit", "-m", "add NewWorker")
    assert first.returncode != 0  # pre-commit fails a hook that changed files
    assert "files were modified by this hook" in first.stdout + first.stderr
    assert (repo / "pkg" / "new.py").read_text() == GOOD.format(name="NewWorker")
    assert (repo / "pkg" / "old.py").read_bytes() == old  # the base's violation is left alone

    assert _run(repo, env, "git", "add", "pkg/new.py").returncode == 0
    second = _run(repo, env, "git", "commit", "-m", "add NewWorker")
    assert second.returncode == 0, second.stdout + second.stderr
