"""The service's repair against hostile target repositories (issue 17, rows 3, 4 and 6), through
the real API, tasks, git and database (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from bot.app import create_app
from bot.cli.demo_target import build_target
from bot.db.models import Fix, RepairRun, RunState, utcnow
from bot.db.session import session_scope
from bot.git import commit_all
from bot.pipeline.reconcile.lost_runs import attempt_alive
from bot.pipeline.reconcile.task import reconcile_once
from tests import held_repair
from tests.conftest import CI_TOKEN, SECRET

LOGS = Path(__file__).parents[3] / "fixtures" / "logs"
CONSOLE = (LOGS / "py312" / "contract_override.console.txt").read_bytes()
GOLDEN = Path(__file__).parents[3] / "fixtures" / "sweep" / "golden" / "before"


@pytest.fixture
def use_settings(settings, task_settings):
    """This test's settings, given to the tasks it runs."""
    return task_settings(settings)


def _report(settings, query: str) -> int:
    with TestClient(create_app(settings)) as client:
        response = client.post(
            f"/api/v1/ci-failures{query}",
            content=CONSOLE,
            headers={"Authorization": f"Bearer {CI_TOKEN}"},
        )
    assert response.status_code == 202, response.text
    return int(response.json()["report_id"])


def _run_for(settings, query: str) -> int:
    from bot.pipeline.triage import triage

    report_id = _report(settings, query)
    triage.run(report_id)
    with session_scope(settings.resolved_database_url) as session:
        return session.scalars(select(RepairRun.id).where(RepairRun.report_id == report_id)).one()


def _run(settings, run_id: int) -> RepairRun:
    with session_scope(settings.resolved_database_url) as session:
        run = session.get_one(RepairRun, run_id)
        session.expunge(run)
        return run


def _fixes(settings) -> list[Fix]:
    with session_scope(settings.resolved_database_url) as session:
        fixes = list(session.scalars(select(Fix)))
        for fix in fixes:
            session.expunge(fix)
        return fixes


def test_the_repair_never_rewrites_a_file_outside_through_a_symlink(use_settings, tmp_path):
    from bot.pipeline.repair.task import repair

    repo = tmp_path / "target"
    build_target(repo)
    outside = tmp_path / "outside" / "evil.py"
    outside.parent.mkdir()
    legacy = (repo / "legacy_spec" / "mtp.py").read_text()
    outside.write_text(legacy.replace("class MTPWorker(", "class OutsideWorker("))
    before = outside.read_bytes()
    (repo / "legacy_spec" / "outside_link.py").symlink_to(outside)
    head = commit_all(repo, "A tracked symlink out of the repository")
    run_id = _run_for(use_settings, f"?repository={repo}&head_sha={head}")
    repair.run(run_id)
    assert _run(use_settings, run_id).state == "pr_opened", _run(use_settings, run_id).reason
    (fix,) = _fixes(use_settings)
    assert "legacy_spec/mtp.py" in fix.files and "legacy_spec/outside_link.py" not in fix.files
    assert "OutsideWorker" not in (fix.diff or "")
    assert outside.read_bytes() == before


def test_a_repository_outside_the_roots_is_refused_and_never_touched(use_settings, tmp_path):
    from bot.pipeline.repair.task import repair

    use_settings.repository_roots = [tmp_path / "allowed"]
    repo = tmp_path / "elsewhere"
    head = build_target(repo)
    branches = subprocess.run(
        ["git", "-C", str(repo), "branch", "--list"], capture_output=True, text=True, check=True
    ).stdout
    run_id = _run_for(use_settings, f"?repository={repo}&head_sha={head}")
    repair.run(run_id)
    run = _run(use_settings, run_id)
    assert run.state == "error" and "outside the allowed roots" in run.reason
    assert not _fixes(use_settings)
    after = subprocess.run(
        ["git", "-C", str(repo), "branch", "--list"], capture_output=True, text=True, check=True
    ).stdout
    assert after == branches  # no fix branch pushed into it


def test_our_own_checkouts_in_the_data_dir_are_refused(use_settings, tmp_path):
    from bot.pipeline.repair.task import repair

    use_settings.repository_roots = []  # only the data dir is allowed
    source = tmp_path / "source"
    head = build_target(source)
    mine = use_settings.worktrees_dir / "run-999-abc"
    subprocess.run(
        ["git", "-C", str(source), "worktree", "add", "--detach", str(mine), head],
        check=True,
        capture_output=True,
    )
    run_id = _run_for(use_settings, f"?repository={mine}&head_sha={head}")
    repair.run(run_id)
    run = _run(use_settings, run_id)
    assert run.state == "error" and "repairbot's own checkouts" in run.reason


def test_a_repository_in_the_data_dir_is_allowed_by_default(use_settings):
    from bot.pipeline.repair.task import repair

    use_settings.repository_roots = []
    repo = use_settings.data_dir / "demo" / "target"
    head = build_target(repo)
    run_id = _run_for(use_settings, f"?repository={repo}&head_sha={head}&base_ref=main")
    repair.run(run_id)
    assert _run(use_settings, run_id).state == "pr_opened", _run(use_settings, run_id).reason


def test_an_unknown_base_ref_is_refused_and_opens_no_pr(use_settings, tmp_path):
    from bot.pipeline.repair.task import repair

    repo = tmp_path / "target"
    head = build_target(repo)
    run_id = _run_for(use_settings, f"?repository={repo}&head_sha={head}&base_ref=no-such-branch")
    repair.run(run_id)
    run = _run(use_settings, run_id)
    assert run.state == "error"
    assert "base_ref 'no-such-branch' does not exist" in run.reason
    assert not _fixes(use_settings)


# ---- row 4: a run that exhausts its memory fails for good ---------------------------------------
def _env(settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPAIRBOT_")}
    env.update(
        {
            "REPAIRBOT_ENVIRONMENT": "test",
            "REPAIRBOT_DATA_DIR": str(settings.data_dir),
            "REPAIRBOT_DATABASE_URL": settings.resolved_database_url,
            "REPAIRBOT_GITHUB_WEBHOOK_SECRET": SECRET,
            "REPAIRBOT_CI_TOKEN": CI_TOKEN,
            "REPAIRBOT_REPOSITORY_ROOTS": json.dumps([str(p) for p in settings.repository_roots]),
        }
    )
    return env


# Import everything first, then cap the address space: the repair itself gets about 700 MiB,
# far below what parsing the module below takes (several GiB without a cap).
_UNDER_A_MEMORY_BUDGET = """
import resource, sys
from bot.pipeline.repair.task import repair
import fixers.sweep.run, libcst
size = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + (700 << 20), resource.RLIM_INFINITY))
repair.run(int(sys.argv[1]))
"""


def _huge_module(path: Path, size: int) -> None:
    line = b"        1234567890, 1234567890, 1234567890, 1234567890, 1234567890, 1234567890,\n"
    with path.open("wb") as out:
        out.write(b"from pkg.base import SpecWorkerBase\n\n\nclass Big(SpecWorkerBase):\n")
        out.write(b"    table = [\n")
        for _ in range(size // len(line)):
            out.write(line)
        out.write(b"    ]\n")


def test_a_repair_that_runs_out_of_memory_fails_and_is_not_retried(use_settings, tmp_path):
    repo = tmp_path / "target"
    shutil.copytree(GOLDEN, repo)
    _huge_module(repo / "pkg" / "huge.py", 60 << 20)
    # The operator raised the per-file cap, so the huge module is parsed: memory runs out.
    (repo / ".repairbot.toml").write_text("max_file_bytes = 100_000_000\n")
    subprocess.run(["git", "init", "--quiet", str(repo)], check=True)
    head = commit_all(repo, "A module too big to parse within the budget")
    run_id = _run_for(use_settings, f"?repository={repo}&head_sha={head}")
    proc = subprocess.run(
        [sys.executable, "-c", _UNDER_A_MEMORY_BUDGET, str(run_id)],
        env=_env(use_settings),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parents[4],
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = _run(use_settings, run_id)
    assert run.state == RunState.FAILED.value, run.reason
    assert "ran out of memory" in run.reason and "not retried" in run.reason
    with session_scope(use_settings.resolved_database_url) as session:
        session.get_one(RepairRun, run_id).updated_at = utcnow() - timedelta(hours=1)
    reconcile_once(use_settings)
    after = _run(use_settings, run_id)  # failed is final: the reconciler re-sends nothing
    assert (after.state, after.reason, after.attempts) == (run.state, run.reason, run.attempts)


# ---- a worker killed at the same point twice is not sent a third time --------------------------
def _kill_while_paused(settings, run_id: int, pause: Path, attempt: int) -> None:
    """Start the repair in its own process, wait until that attempt holds at the pause (after
    the patch), then kill -9 it.

    The repair task runs through tests.held_repair, which holds it after its patch while
    ``pause`` exists: the kill must land at that one step, every time, for the reconciler's and
    the repair's own give-up rules to be tested. The task is otherwise the real one.
    """
    pause.touch()
    worker = subprocess.Popen(
        held_repair.command(pause, "--run", str(run_id)),
        env=_env(settings),
        cwd=Path(__file__).parents[4],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while True:
        run = _run(settings, run_id)
        paused = run.state == RunState.PATCHED.value and not run.reason.startswith("re-sent")
        # The state may still be the killed attempt's: wait until this attempt holds its own
        # worktree lease (one lease per attempt), or the kill could land before it took one.
        leases = sorted(settings.worktrees_dir.glob(f"run-{run_id}-*.lease"))
        own = len(leases) == attempt and attempt_alive(settings.worktrees_dir, run_id)
        if run.attempts == attempt and paused and own:
            break
        assert worker.poll() is None and time.monotonic() < deadline, "the repair did not pause"
        time.sleep(0.1)
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=30)
    # A child the attempt forked (a warm import-check sandbox) may hold the lease a moment
    # longer on a loaded machine; the attempt counts as killed once nothing holds it.
    deadline = time.monotonic() + 60
    while attempt_alive(settings.worktrees_dir, run_id):
        assert time.monotonic() < deadline, "the killed attempt's lease is still held"
        time.sleep(0.1)


def _age(settings, run_id: int) -> None:
    with session_scope(settings.resolved_database_url) as session:
        session.get_one(RepairRun, run_id).updated_at = utcnow() - timedelta(minutes=10)


def test_a_run_whose_worker_dies_twice_at_the_same_step_is_failed_not_resent(
    use_settings, tmp_path
):
    repo = tmp_path / "target"
    head = build_target(repo)
    run_id = _run_for(use_settings, f"?repository={repo}&head_sha={head}")
    _kill_while_paused(use_settings, run_id, tmp_path / "pause", attempt=1)
    _age(use_settings, run_id)
    reconcile_once(use_settings)
    run = _run(use_settings, run_id)  # one loss: re-sent (a kill -9 loses nothing)
    assert run.state == RunState.PATCHED.value and run.reason.startswith("re-sent: attempt 1")
    _kill_while_paused(use_settings, run_id, tmp_path / "pause", attempt=2)  # dies the same way
    _age(use_settings, run_id)
    reconcile_once(use_settings)
    run = _run(use_settings, run_id)
    assert run.state == RunState.FAILED.value
    assert "attempts 1 and 2 were both lost in state patched" in run.reason
    assert "not retried" in run.reason


def test_a_living_slow_attempt_is_not_taken_for_a_lost_one(use_settings, tmp_path):
    from bot.runner.workdirs import leased

    repo = tmp_path / "target"
    head = build_target(repo)
    run_id = _run_for(use_settings, f"?repository={repo}&head_sha={head}")
    _kill_while_paused(use_settings, run_id, tmp_path / "pause", attempt=1)
    _age(use_settings, run_id)
    reconcile_once(use_settings)
    with session_scope(use_settings.resolved_database_url) as session:
        session.get_one(RepairRun, run_id).attempts += 1  # the re-sent attempt started ...
    with leased(use_settings.worktrees_dir.resolve() / f"run-{run_id}-slow"):  # ... and works on
        _age(use_settings, run_id)
        reconcile_once(use_settings)
    run = _run(use_settings, run_id)  # re-sent as before, not failed
    assert run.state == RunState.PATCHED.value and run.reason.startswith("re-sent: attempt 2")


def test_a_redelivered_repair_whose_attempts_were_killed_twice_fails_at_its_start(
    use_settings, tmp_path
):
    """The broker hands a killed worker's message straight back (acks_late): no reconciler is
    involved, so the repair's own start must stop the loop."""
    from bot.pipeline.repair.task import repair

    repo = tmp_path / "target"
    head = build_target(repo)
    run_id = _run_for(use_settings, f"?repository={repo}&head_sha={head}")
    _kill_while_paused(use_settings, run_id, tmp_path / "pause", attempt=1)
    _kill_while_paused(use_settings, run_id, tmp_path / "pause", attempt=2)  # redelivered, killed
    repair.run(run_id)  # the third delivery
    run = _run(use_settings, run_id)
    assert (run.state, run.attempts) == (RunState.FAILED.value, 2)
    assert "2 attempts were killed while they worked on it" in run.reason
    assert "not retried" in run.reason


def test_a_run_started_too_often_gives_up_at_its_start(use_settings, tmp_path):
    from bot.pipeline.repair.task import repair

    repo = tmp_path / "target"
    head = build_target(repo)
    run_id = _run_for(use_settings, f"?repository={repo}&head_sha={head}")
    with session_scope(use_settings.resolved_database_url) as session:
        session.get_one(RepairRun, run_id).attempts = use_settings.task_max_retries
    repair.run(run_id)
    run = _run(use_settings, run_id)
    assert run.state == RunState.ERROR.value and run.reason == "gave up after 5 attempts"
    assert not _fixes(use_settings)
