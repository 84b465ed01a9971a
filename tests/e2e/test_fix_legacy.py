"""The runtime's legacy worker tree -> ``repairbot fix --write`` -> the conformance suite passes.

Everything runs as real subprocesses: the installed console script, the runtime's conformance
suite under pytest, and the legacy tree's own tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
LEGACY = REPO / "tests" / "fixtures" / "legacy_workers"
REPAIRBOT = Path(sys.executable).with_name("repairbot")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=600
    )


def _conformance(tree: Path) -> subprocess.CompletedProcess[str]:
    return _run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/runtime/test_conformance.py",
            "--spec-package",
            "legacy_spec",
            "--spec-path",
            str(tree),
        ],
        REPO,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    if not LEGACY.is_dir():
        pytest.fail(f"{LEGACY} is missing: the runtime's legacy fixtures are required")
    root = tmp_path / "legacy_workers"
    shutil.copytree(LEGACY, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_fix_makes_the_legacy_tree_conform(tree: Path) -> None:
    before = _conformance(tree)
    assert before.returncode != 0, before.stdout[-2000:]
    own_tests = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    assert _run(own_tests, tree).returncode != 0

    command = [
        str(REPAIRBOT) if REPAIRBOT.exists() else sys.executable,
        "fix",
        str(tree),
        "--write",
    ]
    if not REPAIRBOT.exists():
        command[1:1] = ["-m", "bot.cli"]
    fixed = _run(command, REPO)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "wrote 6 file(s)" in fixed.stdout

    after = _conformance(tree)
    assert after.returncode == 0, after.stdout[-3000:] + after.stderr[-2000:]
    run_tests = _run(own_tests, tree)
    assert run_tests.returncode == 0, run_tests.stdout[-3000:]

    dyn = (tree / "legacy_spec" / "dynamic_tree.py").read_text()
    assert '@nvtx_range("mtp_dyn.forward")\n    def _forward_impl(' in dyn
    assert "def _ensure_spec_dec_state_restored(" in dyn
    assert "attn_metadata: AttentionMetadata | None" in dyn

    again = _run([*command[:-1], "--diff"], REPO)
    assert again.returncode == 0 and "+++ " not in again.stdout
