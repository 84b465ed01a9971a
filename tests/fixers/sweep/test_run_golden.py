"""Golden tree: tests/fixtures/sweep/golden/before -> repairbot fix -> exactly .../after."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixers.sweep.run import fix, sweep, write_changes
from tests.fixers.trees import python_files

GOLDEN = Path(__file__).parents[2] / "fixtures" / "sweep" / "golden"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(GOLDEN / "before", root)
    return root


def test_fix_matches_golden_after(tree: Path) -> None:
    result = fix(tree)
    assert all(c.evidence is not None and c.evidence.ok for c in result.changes)
    assert all(c.evidence.import_status == "ok" for c in result.changes if c.evidence)
    write_changes(tree, result)
    assert python_files(tree) == python_files(GOLDEN / "after")


def test_unfixable_and_bad_files_are_reported_with_reasons(tree: Path) -> None:
    result = fix(tree, imports=False)
    reasons = {(s.path, s.reason) for s in [*result.report.skips, *result.skips]}
    assert ("pkg/workers/broken.py", "syntax error at line 4: invalid syntax") in reasons
    assert any(p == "pkg/workers/latin1.py" and "UTF-8" in r for p, r in reasons)
    assert any(
        "HalfDoneWorker lacks _forward_impl" in r and "needs a human" in r for _, r in reasons
    )
    # A field set and never put back is per-call scratch (rule 4): a note, never a violation.
    assert not [v for v in result.report.violations if v.class_qualname.endswith("LeakyWorker")]
    notes = [(n.path, n.line, n.field, n.category) for n in result.report.notes]
    assert (
        "pkg/workers/library_missing.py",
        11,
        "attn_metadata.force_prepare_spec_dec_tree_mask",
        "scratch",
    ) in notes


def test_conforming_and_unrelated_classes_are_untouched(tree: Path) -> None:
    result = fix(tree, imports=False)
    changed = {c.path for c in result.changes}
    assert "pkg/workers/conforming.py" not in changed
    assert "pkg/base.py" not in changed
    nvtx = next(c for c in result.changes if c.path == "pkg/workers/nvtx.py")
    assert "class Unrelated:\n    def forward(self, x):" in nvtx.after


def test_second_run_is_a_no_op(tree: Path) -> None:
    write_changes(tree, fix(tree, imports=False))
    again = fix(tree, imports=False)
    assert again.changes == []
    fixable = {v.path for v in sweep(tree).violations if v.fix is not None}
    assert fixable == {"pkg/workers/latin1.py"}  # reported each time: it is not UTF-8


def test_the_repository_tests_fail_before_and_pass_after(tree: Path) -> None:
    def pytest_run() -> int:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
            cwd=tree,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        return proc.returncode

    assert pytest_run() != 0
    write_changes(tree, fix(tree, imports=False))
    assert pytest_run() == 0
