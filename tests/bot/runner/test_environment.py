"""A target's own test environment: an interpreter it names, or one uv builds from its
requirements (from the package index, as in production), and what refuses to be built."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bot.runner.environment import (
    EnvironmentProblem,
    import_check_python,
    requirements_of,
    target_python,
)
from bot.runner.verification import VerificationOutcome, VerificationPlan, verify
from fixers.contracts.model import SPEC_WORKER_CONTRACT
from fixers.sandbox import Limits, sandbox_problem
from fixers.sweep.run import fix
from tests.bot.runner.conftest import OPS_FIXED, TinyRepo

FAILED = ["tests/test_ops.py::test_add"]
# A poetry 2 lock as poetry writes it (hashes left out): humanize pinned to an older release.
POETRY_LOCK = (
    '[[package]]\nname = "humanize"\nversion = "4.9.0"\noptional = false\n'
    'python-versions = ">=3.8"\nfiles = []\n\n[metadata]\nlock-version = "2.1"\n'
)
# humanize is not in repairbot's own environment: the target's tests need theirs.
NEEDS_HUMANIZE = (
    "import humanize\nfrom calc.ops import add\n\n\n"
    "def test_add():\n    assert add(2, 2) == 4 and humanize.intcomma(1000) == '1,000'\n"
)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize(
    "line",
    ["-r other.txt", "--index-url http://evil.invalid/simple", "pkg @ https://evil.invalid/p.whl",
     "./local/path", "file:///etc/passwd"],
)  # fmt: skip
def test_a_requirement_that_is_not_plain_is_refused(tmp_path: Path, line: str) -> None:
    _write(tmp_path, {"requirements.txt": f"humanize\n{line}\n"})
    with pytest.raises(EnvironmentProblem, match="refused"):
        requirements_of(tmp_path, None)


def test_requirements_come_from_the_files_named_else_pyproject(tmp_path: Path) -> None:
    _write(tmp_path, {"pyproject.toml": '[project]\nname = "t"\ndependencies = ["humanize>=4"]\n'})
    assert requirements_of(tmp_path, None) == ["humanize>=4"]
    _write(tmp_path, {"req/test.txt": "# tests\nhumanize  # the one\n\niniconfig\n"})
    assert requirements_of(tmp_path, ["req/test.txt"]) == ["humanize", "iniconfig"]
    with pytest.raises(EnvironmentProblem, match="no such file"):
        requirements_of(tmp_path, ["missing.txt"])


def test_a_lock_file_is_preferred_to_loose_requirements(tmp_path: Path) -> None:
    _write(tmp_path, {"requirements.txt": "humanize>=4\n", "poetry.lock": POETRY_LOCK})
    assert requirements_of(tmp_path, None) == ["humanize==4.9.0"]
    assert requirements_of(tmp_path, ["requirements.txt"]) == ["humanize>=4"]
    _write(tmp_path, {"poetry.lock": '[[package]]\nname = "h"\nversion = "1"\n'
                      '[package.source]\ntype = "git"\nurl = "https://example.invalid/h"\n'})  # fmt: skip
    with pytest.raises(EnvironmentProblem, match="h comes from a git source"):
        requirements_of(tmp_path, None)


def test_without_verify_the_verdict_names_repairbots_own_interpreter(tmp_path: Path) -> None:
    chosen = target_python(tmp_path, None)
    assert chosen.description.startswith("repairbot's own interpreter")


def _plan(tiny_repo: TinyRepo, config: dict[str, str]) -> VerificationPlan:
    """The fix of ``calc/ops.py`` on top of a base that adds ``config``."""
    base = tiny_repo.commit(config, "the target's environment")
    repo = TinyRepo(tiny_repo.path, base)
    head = repo.commit({"calc/ops.py": OPS_FIXED})
    return VerificationPlan(repo.path, base, head, ["calc/ops.py"], FAILED, "cpu")


def _verify(plan: VerificationPlan, run_dir: Path, envs: Path) -> VerificationOutcome:
    return verify(
        plan, run_dir=run_dir, limits=Limits(timeout_s=300), reruns=0,
        should_cancel=lambda: False, environments=envs,
    )  # fmt: skip


def test_a_target_with_its_own_dependency_verifies_in_a_uv_built_environment(
    tiny_repo: TinyRepo, tmp_path: Path
) -> None:
    plan = _plan(tiny_repo, {
        "tests/test_ops.py": NEEDS_HUMANIZE,
        "requirements.txt": "humanize\n",
        ".repairbot.toml": '[verify]\nenvironment = "uv"\n',
    })  # fmt: skip
    outcome = _verify(plan, tmp_path / "run", tmp_path / "envs")
    assert outcome.verdict == "fixed", outcome.problems
    assert outcome.environment.startswith("uv environment ")
    assert "humanize " in outcome.environment and "missing" not in outcome.environment
    # Built once: a second verification reuses it.
    built = [p for p in (tmp_path / "envs").iterdir() if (p / ".complete").is_file()]
    assert len(built) == 1
    again = _verify(plan, tmp_path / "run2", tmp_path / "envs")
    assert again.verdict == "fixed" and again.environment == outcome.environment


def test_a_target_with_a_lock_verifies_with_its_pinned_versions(
    tiny_repo: TinyRepo, tmp_path: Path
) -> None:
    plan = _plan(tiny_repo, {
        "tests/test_ops.py": NEEDS_HUMANIZE,
        "requirements.txt": "humanize\n",  # loose: the lock's pin is what must be installed
        "poetry.lock": POETRY_LOCK,
        ".repairbot.toml": '[verify]\nenvironment = "uv"\n',
    })  # fmt: skip
    outcome = _verify(plan, tmp_path / "run", tmp_path / "envs")
    assert outcome.verdict == "fixed", outcome.problems
    assert "humanize 4.9.0" in outcome.environment


def test_the_same_target_in_repairbots_own_interpreter_cannot_import_it(
    tiny_repo: TinyRepo, tmp_path: Path
) -> None:
    base = tiny_repo.commit({"tests/test_ops.py": NEEDS_HUMANIZE}, "no [verify]")
    repo = TinyRepo(tiny_repo.path, base)
    head = repo.commit({"calc/ops.py": OPS_FIXED})
    plan = VerificationPlan(repo.path, base, head, ["calc/ops.py"], FAILED, "cpu")
    outcome = verify(
        plan, run_dir=tmp_path / "run", limits=Limits(timeout_s=300), reruns=0,
        should_cancel=lambda: False,
    )  # fmt: skip
    assert outcome.verdict != "fixed"
    assert outcome.environment.startswith("repairbot's own interpreter")
    assert "; pytest " in outcome.environment  # its versions, read inside the sandbox


WORKER_NEEDING_HUMANIZE = (
    "import humanize\n\nfrom pkg.base import SpecWorkerBase\n\n\n"
    "class CountingWorker(SpecWorkerBase):\n"
    "    def forward(self, *args, **kwargs):\n        return humanize.intcomma(len(args))\n"
)


@pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))
def test_a_fix_is_import_checked_in_the_targets_own_environment(tmp_path: Path) -> None:
    golden = Path(__file__).parents[2] / "fixtures/sweep/golden/before/pkg/base.py"
    root = _write(tmp_path / "repo", {
        "pkg/__init__.py": "", "pkg/base.py": golden.read_text(),
        "pkg/counting.py": WORKER_NEEDING_HUMANIZE,
        "requirements.txt": "humanize\n", ".repairbot.toml": '[verify]\nenvironment = "uv"\n',
    })  # fmt: skip
    python, problem = import_check_python(root, tmp_path / "envs")
    assert problem == "" and python.startswith(str(tmp_path / "envs"))
    ours = fix(root, [SPEC_WORKER_CONTRACT])
    theirs = fix(root, [SPEC_WORKER_CONTRACT], python=python)

    def status(result: object) -> str:
        [change] = [c for c in result.changes if c.path == "pkg/counting.py"]  # type: ignore[attr-defined]
        return change.evidence.import_status

    assert status(ours) == "unverified"  # humanize is not in repairbot's own interpreter
    assert status(theirs) == "ok"


def test_an_environment_that_cannot_be_had_falls_back_with_the_reason(tmp_path: Path) -> None:
    _write(tmp_path, {"requirements.txt": "-r other.txt\n",
                      ".repairbot.toml": '[verify]\nenvironment = "uv"\n'})  # fmt: skip
    python, problem = import_check_python(tmp_path, tmp_path / "envs")
    assert python == sys.executable and "refused" in problem
