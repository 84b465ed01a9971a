"""Whole verifications of real git repositories, run in the sandbox: every verdict and ending."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from bot.runner.verification import VerificationPlan, verify
from fixers.sandbox import Limits
from tests.bot.runner.conftest import OPS_BREAKS_SUB, OPS_FIXED, OPS_NOT_FIXED, TinyRepo

FAILED = ["tests/test_ops.py::test_add"]
DEFAULT_LIMITS = Limits(timeout_s=300)
PYENV_312 = Path.home() / ".pyenv" / "versions" / "3.12.1" / "bin" / "python"


def _verify(
    repo,
    head,
    tmp_path,
    *,
    limits=DEFAULT_LIMITS,
    cancel=lambda: False,
    python=None,
    queue="gpu.H100_PCIe",
):
    plan = VerificationPlan(repo.path, repo.base, head, ["calc/ops.py"], FAILED, queue)
    kwargs = {"python": str(python)} if python else {}
    return verify(
        plan, run_dir=tmp_path / "run", limits=limits, reruns=1, should_cancel=cancel, **kwargs
    )


def test_a_real_fix_is_fixed_and_says_where_it_ran(tiny_repo, tmp_path):
    outcome = _verify(tiny_repo, tiny_repo.commit({"calc/ops.py": OPS_FIXED}), tmp_path)
    assert outcome.verdict == "fixed"
    assert {t.test_id: t.meaning for t in outcome.tests}["tests/test_ops.py::test_add"] == "fixed"
    assert outcome.selection.importing_tests == ["tests/test_ops.py"]
    assert outcome.device == "cpu" and outcome.on_requested_device is False
    assert "bubblewrap" in outcome.isolation


def test_a_fix_of_one_root_cause_is_not_red_for_the_logs_other_root_cause(tiny_repo, tmp_path):
    other = "tests/test_geometry.py::test_area"
    failing = "from calc.ops import add\n\n\ndef test_area():\n    assert add(1, 1) == 3\n"
    base = tiny_repo.commit({"tests/test_geometry.py": failing}, "another root cause")
    repo = TinyRepo(tiny_repo.path, base)
    head = repo.commit({"calc/ops.py": OPS_FIXED})
    plan = VerificationPlan(
        repo.path, base, head, ["calc/ops.py"], FAILED, "gpu.H100_PCIe", other_tests=[other]
    )
    outcome = verify(
        plan, run_dir=tmp_path / "run", limits=DEFAULT_LIMITS, reruns=1, should_cancel=lambda: False
    )
    meanings = {t.test_id: (t.before, t.after, t.meaning) for t in outcome.tests}
    # It imports the changed module, so it ran on both sides: failing, and not this fix's.
    assert meanings[other] == ("failed", "failed", "not_addressed")
    assert meanings["tests/test_ops.py::test_add"][2] == "fixed"
    assert outcome.verdict == "fixed"


def test_a_patch_that_does_not_fix_is_still_failing(tiny_repo, tmp_path):
    outcome = _verify(tiny_repo, tiny_repo.commit({"calc/ops.py": OPS_NOT_FIXED}), tmp_path)
    assert outcome.verdict == "still_failing"


def test_a_patch_that_breaks_another_test_is_a_new_failure(tiny_repo, tmp_path):
    outcome = _verify(tiny_repo, tiny_repo.commit({"calc/ops.py": OPS_BREAKS_SUB}), tmp_path)
    assert outcome.verdict == "new_failures"
    meanings = {t.test_id: t.meaning for t in outcome.tests}
    assert meanings["tests/test_ops.py::test_sub"] == "new_failure"


def test_a_flaky_failure_is_rerun_before_it_counts(tiny_repo, tmp_path):
    flaky = (
        "import os\nfrom pathlib import Path\n\n\ndef test_flaky():\n"
        "    marker = Path(os.environ['TMPDIR']) / 'seen'\n"
        "    if not marker.exists():\n        marker.touch()\n        raise AssertionError('first run fails')\n"
    )
    head = tiny_repo.commit(
        {"calc/ops.py": OPS_FIXED, "tests/test_flaky_ops.py": "from calc import ops\n" + flaky}
    )
    plan = VerificationPlan(
        tiny_repo.path,
        tiny_repo.base,
        head,
        ["calc/ops.py", "tests/test_flaky_ops.py"],
        FAILED,
        "cpu",
    )
    outcome = verify(
        plan,
        run_dir=tmp_path / "run",
        limits=Limits(timeout_s=300),
        reruns=2,
        should_cancel=lambda: False,
    )
    assert "tests/test_flaky_ops.py::test_flaky" in outcome.flaky
    assert outcome.verdict == "fixed"


def test_a_timeout_ends_with_a_clear_state(tiny_repo, tmp_path):
    slow = "import time\nfrom calc import ops\n\n\ndef test_slow():\n    time.sleep(600)\n"
    head = tiny_repo.commit({"calc/ops.py": OPS_FIXED, "tests/test_slow.py": slow})
    plan = VerificationPlan(tiny_repo.path, tiny_repo.base, head, ["calc/ops.py"], FAILED, "cpu")
    began = time.monotonic()
    outcome = verify(
        plan,
        run_dir=tmp_path / "run",
        limits=Limits(timeout_s=5),
        reruns=0,
        should_cancel=lambda: False,
    )
    assert outcome.timed_out and outcome.verdict is None
    assert time.monotonic() - began < 120


GRANDCHILD = "import sys, time\ntime.sleep(3)\nopen(sys.argv[1], 'w').write('alive')\n"
SPAWNER = """import os, subprocess, sys, time
from pathlib import Path

from calc import ops


def test_spawns():
    script = Path(__file__).with_name("grandchild.py")
    subprocess.Popen([sys.executable, str(script), os.environ["SURVIVED"]])
    (Path(os.environ["TMPDIR"]) / "started").write_text("1")
    time.sleep(600)
"""


def test_cancellation_kills_the_whole_process_group(tiny_repo, tmp_path):
    started = tmp_path / "run" / "tmp" / "started"
    survived = tmp_path / "run" / "survived"
    head = tiny_repo.commit(
        {
            "calc/ops.py": OPS_FIXED,
            "tests/test_spawn.py": SPAWNER,
            "tests/grandchild.py": GRANDCHILD,
        }
    )
    plan = VerificationPlan(tiny_repo.path, tiny_repo.base, head, ["calc/ops.py"], FAILED, "cpu")
    outcome = verify(
        plan,
        run_dir=tmp_path / "run",
        limits=Limits(timeout_s=300),
        reruns=0,
        should_cancel=started.exists,
        extra_env={"SURVIVED": str(survived)},
    )
    assert outcome.cancelled and outcome.verdict is None
    time.sleep(5)  # the grandchild would have written its file by now had it survived
    assert not survived.exists()


def test_tests_writing_outside_their_directory_fail_and_the_host_is_untouched(tiny_repo, tmp_path):
    target = Path.home() / f"repairbot-escape-{uuid.uuid4().hex}.txt"
    escape = (
        f"from calc import ops\n\n\ndef test_escape():\n    open({str(target)!r}, 'w').write('x')\n"
    )
    head = tiny_repo.commit({"calc/ops.py": OPS_FIXED, "tests/test_escape.py": escape})
    plan = VerificationPlan(tiny_repo.path, tiny_repo.base, head, ["calc/ops.py"], FAILED, "cpu")
    try:
        outcome = verify(
            plan,
            run_dir=tmp_path / "run",
            limits=Limits(timeout_s=300),
            reruns=0,
            should_cancel=lambda: False,
        )
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)
    assert {t.test_id: t.after for t in outcome.tests}[
        "tests/test_escape.py::test_escape"
    ] == "failed"
    assert outcome.verdict == "new_failures"


@pytest.mark.skipif(
    not PYENV_312.exists(), reason="needs the pyenv Python 3.12 (no pytest installed)"
)
def test_a_target_without_pytest_is_a_clear_error(tiny_repo, tmp_path):
    outcome = _verify(
        tiny_repo, tiny_repo.commit({"calc/ops.py": OPS_FIXED}), tmp_path, python=PYENV_312
    )
    assert outcome.verdict is None
    assert any("is pytest installed?" in problem for problem in outcome.problems)
