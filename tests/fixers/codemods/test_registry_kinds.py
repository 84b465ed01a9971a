"""A new violation kind is one module: the worked example of docs/extending.md, written into the
codemods package as it stands in the document, is named by its own signature in a CI log, found
by the sweep, fixed, and offered by a review, with nothing else edited."""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import fixers.codemods
from bot.forges.review_plan import offered_as
from fixers.classify.root_causes import classify_file
from fixers.classify.signatures import builtin_signatures
from fixers.codemods.registry import builtin_codemods
from fixers.contracts.model import SPEC_WORKER_CONTRACT
from fixers.sweep.run import fix, run_sweep

ROOT = Path(__file__).parents[3]
GOLDEN_BASE = ROOT / "tests/fixtures/sweep/golden/before/pkg/base.py"
WORKER = (
    "from pkg.base import SpecWorkerBase\n\n\n"
    "class DebugWorker(SpecWorkerBase):\n"
    "    def _forward_impl(self, x, **kwargs):\n"
    "        breakpoint()\n"
    "        return x\n"
)


def _documented_module() -> str:
    text = (ROOT / "docs/extending.md").read_text(encoding="utf-8")
    [block] = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    return block


@pytest.fixture
def toy_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    folder = tmp_path / "more_codemods"
    folder.mkdir()
    (folder / "leftover_breakpoint.py").write_text(_documented_module(), encoding="utf-8")
    importlib.invalidate_caches()
    monkeypatch.setattr(fixers.codemods, "__path__", [*fixers.codemods.__path__, str(folder)])
    builtin_codemods.cache_clear()
    builtin_signatures.cache_clear()
    yield
    sys.modules.pop("fixers.codemods.leftover_breakpoint", None)
    builtin_codemods.cache_clear()
    builtin_signatures.cache_clear()


def _repo(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/__init__.py").write_text("")
    shutil.copy(GOLDEN_BASE, root / "pkg/base.py")
    (root / "pkg/debug.py").write_text(WORKER)
    return root


def test_the_documented_kind_is_found_fixed_and_offered(toy_kind: None, tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    result = fix(root, [SPEC_WORKER_CONTRACT], imports=False)
    [violation] = [v for v in result.report.violations if v.kind == "leftover-breakpoint"]
    assert (violation.path, violation.line, violation.fix) == ("pkg/debug.py", 6, "drop-breakpoint")
    [change] = [c for c in result.changes if c.path == "pkg/debug.py"]
    assert "breakpoint()" not in change.after and "        return x\n" in change.after
    assert change.evidence is not None and change.evidence.idempotent and change.evidence.scoped
    assert "drop-breakpoint" in offered_as("suggestion")
    (root / "pkg/debug.py").write_text(change.after)
    again = run_sweep(root, [SPEC_WORKER_CONTRACT]).report.violations
    assert not [v for v in again if v.kind == "leftover-breakpoint"]


def _ci_log(root: Path) -> Path:
    """The console log of a real pytest run reaching the worker's breakpoint() with stdin at EOF,
    as a CI job has it."""
    (root / "tests").mkdir()
    (root / "tests/test_debug.py").write_text(
        "from pkg.debug import DebugWorker\n\n\n"
        "def test_forward():\n"
        "    assert DebugWorker()._forward_impl(1) == 1\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests"],
        cwd=root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
    )
    log = root.parent / "console.log"
    log.write_bytes(run.stdout)
    return log


def test_the_documented_signature_names_the_kind_in_a_ci_log(
    toy_kind: None, tmp_path: Path
) -> None:
    log = _ci_log(_repo(tmp_path / "repo"))
    [finding] = classify_file(log)
    assert (finding.signature, finding.fixer) == ("leftover-breakpoint", "drop-breakpoint")
    assert finding.tests == ["tests/test_debug.py::test_forward"]


def test_without_the_module_the_kind_does_not_exist(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    report = run_sweep(root, [SPEC_WORKER_CONTRACT]).report
    assert not [v for v in report.violations if v.kind == "leftover-breakpoint"]
    assert "drop-breakpoint" not in offered_as("suggestion")
    assert [f.fixer for f in classify_file(_ci_log(root))] == [None]
