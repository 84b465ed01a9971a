"""The service's sandbox policy: no unconfined target code outside development, nothing read
back through a target's links, the data dir hidden."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.runner.pr_summary import comment_body
from bot.runner.sandbox import sandbox_limits, sandbox_note, sandbox_options, sandbox_state
from bot.runner.verification import VerificationPlan, verify
from fixers.sandbox import CGROUP_ROOT, Limits, SandboxUnavailable
from tests.bot.runner.conftest import OPS_FIXED, TinyRepo
from tests.conftest import make_settings

FAILED = ["tests/test_ops.py::test_add"]
SECRET = "secret-test-name-from-another-run"


def test_running_unsandboxed_is_refused_outside_development(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="development only"):
        make_settings(tmp_path / "data", allow_unsandboxed=True)
    allowed = make_settings(tmp_path / "data", allow_unsandboxed=True, environment="development")
    assert sandbox_options(allowed).allow_unsandboxed
    assert not sandbox_options(make_settings(tmp_path / "data")).allow_unsandboxed


def test_the_data_dir_and_the_app_key_are_hidden(tmp_path: Path) -> None:
    key = tmp_path / "app.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\n")
    (tmp_path / "data").mkdir()
    options = sandbox_options(make_settings(tmp_path / "data", github_private_key_path=key))
    assert options.hidden == ((tmp_path / "data").absolute(), key.absolute())


def test_a_path_that_does_not_exist_has_nothing_to_hide(tmp_path: Path) -> None:
    # bubblewrap cannot make a mount point for it inside a read-only bind (./.repairbot).
    options = sandbox_options(
        make_settings(tmp_path / "absent", github_private_key_path=tmp_path / "no.pem")
    )
    assert options.hidden == ()


def test_verification_refuses_to_run_target_code_without_bwrap(
    tiny_repo: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = tiny_repo.commit({"calc/ops.py": OPS_FIXED})
    plan = VerificationPlan(tiny_repo.path, tiny_repo.base, head, ["calc/ops.py"], FAILED, "cpu")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git = subprocess.run(["which", "git"], capture_output=True, text=True, check=True)
    (bin_dir / "git").symlink_to(git.stdout.strip())
    monkeypatch.setenv("PATH", str(bin_dir))  # a host without bubblewrap
    run_dir = tmp_path / "run"
    with pytest.raises(SandboxUnavailable, match="bwrap is not installed"):
        verify(
            plan,
            run_dir=run_dir,
            limits=Limits(timeout_s=120),
            reruns=0,
            should_cancel=lambda: False,
        )
    assert not (run_dir / "device.txt").exists() and not (run_dir / "after").exists()


SWAP_REPORT = """import os


def pytest_unconfigure(config):
    # After pytest wrote its JUnit report: put a link to another file in its place.
    report = config.option.xmlpath
    if report:
        os.unlink(report)
        os.symlink({target!r}, report)
"""


def test_a_report_swapped_for_a_link_to_a_host_file_is_not_read(
    tiny_repo: TinyRepo, tmp_path: Path
) -> None:
    other_run = tmp_path / "other-run.xml"  # a host file the service could read, as XML
    other_run.write_text(
        f'<testsuite><testcase classname="tests.test_ops" name="{SECRET}"/></testsuite>'
    )
    head = tiny_repo.commit(
        {"calc/ops.py": OPS_FIXED, "conftest.py": SWAP_REPORT.format(target=str(other_run))}
    )
    plan = VerificationPlan(tiny_repo.path, tiny_repo.base, head, ["calc/ops.py"], FAILED, "cpu")
    outcome = verify(
        plan,
        run_dir=tmp_path / "run",
        limits=Limits(timeout_s=300),
        reruns=0,
        should_cancel=lambda: False,
    )
    assert SECRET not in json.dumps(outcome.results())
    assert any("after: unreadable JUnit report" in p for p in outcome.problems)
    assert outcome.verdict is None


def test_an_allowed_unsandboxed_verification_says_so_in_the_pr_comment(
    tiny_repo: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = tiny_repo.commit({"calc/ops.py": OPS_FIXED})
    plan = VerificationPlan(tiny_repo.path, tiny_repo.base, head, ["calc/ops.py"], FAILED, "cpu")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git = subprocess.run(["which", "git"], capture_output=True, text=True, check=True)
    (bin_dir / "git").symlink_to(git.stdout.strip())
    monkeypatch.setenv("PATH", str(bin_dir))  # a host without bubblewrap
    settings = make_settings(tmp_path / "data", allow_unsandboxed=True, environment="development")
    outcome = verify(
        plan,
        run_dir=tmp_path / "run",
        limits=Limits(timeout_s=300),
        reruns=0,
        should_cancel=lambda: False,
        sandbox=sandbox_options(settings),
    )
    assert outcome.verdict == "fixed"
    results = outcome.results()
    body = comment_body(
        verification_id=1,
        verdict=outcome.verdict,
        state="done",
        reason="",
        device=outcome.device,
        host=outcome.host,
        queue="cpu",
        requested_queue="cpu",
        on_requested=True,
        seconds=outcome.seconds,
        tests=results["tests"],
        flaky=[],
        problems=[],
        isolation=results["isolation"],
    )
    assert "isolation: NOT SANDBOXED (bwrap is not installed" in body


def test_the_settings_bound_every_command_and_name_the_cgroup_root(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path / "data",
        sandbox_memory_bytes=512 << 20,
        sandbox_processes=64,
        sandbox_cpus=1.5,
        sandbox_cpu_seconds=90,
        sandbox_disk_bytes=1 << 30,
        sandbox_cgroup_root=tmp_path / "cgroups",
    )
    limits = sandbox_limits(settings, 42.0)
    assert (limits.timeout_s, limits.max_memory_bytes, limits.max_processes) == (
        42.0,
        512 << 20,
        64,
    )
    assert (limits.cpus, limits.max_cpu_s, limits.max_disk_bytes) == (1.5, 90, 1 << 30)
    options = sandbox_options(settings)
    assert options.cgroup_root == tmp_path / "cgroups"
    assert options.ceiling == sandbox_limits(settings, Limits.timeout_s)


def test_bad_limits_are_refused_with_the_variable_named(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="sandbox_processes"):
        make_settings(tmp_path / "data", sandbox_processes=0)
    with pytest.raises(ValidationError, match="sandbox_memory_bytes"):
        make_settings(tmp_path / "data", sandbox_memory_bytes=1024)


def test_the_state_says_where_cgroups_bound_the_tree_or_why_not(tmp_path: Path) -> None:
    here = sandbox_state(make_settings(tmp_path / "data"))
    assert here == {
        "sandbox": "bubblewrap",
        "tree_limits": f"a cgroup per command under {CGROUP_ROOT}",
    }
    missing = make_settings(tmp_path / "data", sandbox_cgroup_root=tmp_path / "none")
    state = sandbox_state(missing)
    assert state["tree_limits"] == (
        f"per-process rlimits only: {tmp_path / 'none'} does not exist (no cgroup filesystem there)"
    )
    assert sandbox_note(missing) == (f"sandbox: bubblewrap; tree limits: {state['tree_limits']}")
