"""Liveness of the embedded default (`repairbot serve`): a hanging verification stalls nothing,
a killed verification process is re-queued and finishes, and crash leftovers are pruned."""

from __future__ import annotations

import json
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.cli.demo_target import build_target, post_failure, run_tests, wait_for_runs
from bot.db.models import Fix, Verification
from bot.db.session import session_scope
from bot.git import commit_all, fresh_worktree
from tests.bot.runner.test_workdirs import registered
from tests.conftest import CI_TOKEN
from tests.e2e.conftest import wait_for

pytestmark = pytest.mark.e2e

# Both import the fixed workers, so verification selects them; before the fix they fail to
# collect (the guard's TypeError), after it they run. Each leaves a marker in its worktree (the
# test's working directory) so the test knows the verification got that far.
HANGS = (
    "import time\nfrom pathlib import Path\n\nimport legacy_spec  # noqa: F401\n\n\n"
    "def test_hangs():\n    Path('HANGING').write_text('1')\n"
    "    while not Path('RELEASE').exists():  # only the test, when done, ends the hang\n"
    "        time.sleep(0.2)\n"
)
SLOW = (
    "import time\nfrom pathlib import Path\n\nimport legacy_spec  # noqa: F401\n\n\n"
    "def test_slow():\n    Path('SLEEPING').write_text('1')\n    time.sleep(8)\n"
)


@dataclass(frozen=True)
class Target:
    """A failing target repository and its real CI console output."""

    repo: Path
    head: str
    console: bytes


def _target(path: Path, extra_tests: dict[str, str]) -> Target:
    head = build_target(path)
    for name, text in extra_tests.items():
        (path / name).write_text(text)
    if extra_tests:
        head = commit_all(path, "More tests")
    result = run_tests(path)
    assert result.returncode != 0, "the target must fail before the fix"
    return Target(path, head, result.console)


def _post(client: Any, target: Target, build_number: int) -> str:
    answer = post_failure(
        client,
        token=CI_TOKEN,
        repo=target.repo,
        head_sha=target.head,
        console=target.console,
        build_number=build_number,
    )
    return str(answer["url"])


def _database(service) -> str:
    return f"sqlite:///{(service.data_dir / 'repairbot.db').resolve()}"


def _verifications(service, repo: Path) -> list[Verification]:
    with session_scope(_database(service)) as session:
        rows = session.scalars(
            select(Verification)
            .join(Fix, Verification.fix_id == Fix.id)
            .where(Fix.repository == str(repo))
            .order_by(Verification.id)
        ).all()
        session.expunge_all()
        return list(rows)


def _marker(runs: Path, name: str) -> list[Path]:
    return sorted(runs.glob(f"verification-*/after/{name}"))


def test_a_hanging_verification_does_not_stall_triage_and_repairs(make_service, tmp_path):
    hanging = _target(tmp_path / "hanging", {"tests/test_hangs.py": HANGS})
    other = _target(tmp_path / "other", {})
    runs = tmp_path / "runs"
    service = make_service(verify_fallback_after_s="1", runner_dir=str(runs))
    service.start_api()
    try:
        with service.client() as client:
            _post(client, hanging, build_number=1)
            wait_for("the hanging test runs", lambda: _marker(runs, "HANGING"), service.logs)

            report = wait_for_runs(client, _post(client, other, build_number=2), timeout_s=300)
            fixes = {fix["repository"]: fix for fix in client.get("/api/v1/fixes").json()}

        assert [run["state"] for run in report["runs"]] == ["pr_opened"], service.logs()
        assert str(other.repo) in fixes and str(hanging.repo) in fixes
        (stuck,) = _verifications(service, hanging.repo)
        assert stuck.state == "running"  # still hanging while the other repository was repaired
    finally:
        for marker in _marker(runs, "HANGING"):  # no sleeper outlives the test, whatever happens
            (marker.parent / "RELEASE").write_text("1")


def test_a_killed_verification_process_is_requeued_and_leaves_no_worktree(make_service, tmp_path):
    target = _target(tmp_path / "slow", {"tests/test_slow.py": SLOW})
    runs = tmp_path / "runs"
    service = make_service(
        verify_fallback_after_s="1",
        verify_heartbeat_s="0.5",
        verify_lost_after_s="3",
        runner_dir=str(runs),
    )
    service.start_api()
    with service.client() as client:
        _post(client, target, build_number=1)
        wait_for("the slow test runs", lambda: _marker(runs, "SLEEPING"), service.logs)
    (running,) = _verifications(service, target.repo)
    assert running.state == "running" and running.heartbeat_at is not None
    killed = int(running.options["runner"]["pid"])
    assert killed != service.processes["api"].pid  # verification runs in its own process
    assert len(registered(target.repo)) == 2  # before and after, checked out for this run

    os.kill(killed, signal.SIGKILL)

    def finished() -> Verification | None:
        (row,) = _verifications(service, target.repo)
        return row if row.state not in ("queued", "running") else None

    row = wait_for("the re-queued verification finishes", finished, service.logs)
    assert (row.state, row.verdict) == ("done", "fixed"), (row.reason, service.logs())
    assert row.options["attempts"] == 2
    assert int(row.options["runner"]["pid"]) != killed
    assert registered(target.repo) == []  # the killed run's worktrees were pruned
    assert sorted(runs.glob("verification-*")) == []


def test_worktrees_left_by_a_crash_are_pruned_when_the_service_starts(make_service, tmp_path):
    known, crashed = _target(tmp_path / "known", {}), _target(tmp_path / "crashed", {})
    runs, pause = tmp_path / "runs", tmp_path / "pause-before-pr"
    service = make_service(
        worker_queues=json.dumps(["repair"]),  # no verification: only repairs matter here
        runner_dir=str(runs),
    )
    # The crash must leave a repair's worktree behind: the service starts through
    # tests.held_repair, which holds each repair after its patch (worktree made and written)
    # while `pause` exists. The service is otherwise the real one.
    service.hold_repairs(pause)
    service.start_api()
    with service.client() as client:
        first = wait_for_runs(client, _post(client, known, build_number=1), timeout_s=300)
        assert [run["state"] for run in first["runs"]] == ["pr_opened"], service.logs()
        pause.touch()
        url = _post(client, crashed, build_number=2)
        wait_for(
            "the repair is paused in its worktree",
            lambda: [r["state"] for r in client.get(url).json()["runs"]] == ["patched"],
            service.logs,
        )
    (left,) = registered(crashed.repo)
    assert left.parent == (service.data_dir / "worktrees").resolve() and left.is_dir()
    # A verification's worktree whose directory is gone too (a wiped temp dir).
    wiped = fresh_worktree(known.repo, runs / "verification-9-dead" / "after", known.head)
    shutil.rmtree(wiped.parent)
    service.kill("api")  # SIGKILL: no `finally` of the repair runs
    assert registered(crashed.repo) == [left] and registered(known.repo) == [wiped]

    service.start_api()

    assert left not in registered(crashed.repo) and not left.exists()
    assert registered(known.repo) == []
    pause.unlink()  # the crashed repair resumes (re-sent by the reconciler) and cleans up
    with service.client() as client:
        resumed = wait_for_runs(client, url, timeout_s=300)
    assert [run["state"] for run in resumed["runs"]] == ["pr_opened"], service.logs()
    # The PR is recorded a moment before the repair removes its own worktree.
    wait_for(
        "the resumed repair's worktree is gone",
        lambda: registered(crashed.repo) == [],
        service.logs,
    )
