"""Stopped the way process managers stop them (SIGTERM), `repairbot serve` and `repairbot worker`
run their cleanup: the spare import checks' sandboxes stop and their folders go.

Each spare keeps a run folder in the system temp dir (``repairbot-import-probe-*``) and a
``worktrees/spare-*`` folder with its lease. The processes run with ``TMPDIR`` set to a folder
of the test's own (``make_service``), so what they leave there is theirs alone.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from bot.cli.demo_target import post_failure, wait_for_runs
from tests.conftest import CI_TOKEN
from tests.e2e.conftest import wait_for

pytestmark = pytest.mark.e2e
SIGTERM_EXIT = 128 + signal.SIGTERM  # SystemExit(143) after the cleanup, as a shell reports it


def _probe_folders(temp: Path) -> list[Path]:
    return sorted(p for p in temp.glob("repairbot-import-probe-*") if p.is_dir())


def _probe_leftovers(temp: Path) -> list[Path]:
    """Folders and the lease files beside them (fixers/sandbox/run_dirs.py)."""
    return sorted(temp.glob("repairbot-import-probe-*"))


def _spare_folders(worktrees: Path) -> list[Path]:
    return sorted(worktrees.glob("spare-*")) if worktrees.exists() else []


@pytest.mark.parametrize("signalled", ["main process", "process group"])
def test_sigterm_stops_serve_after_removing_its_spare_import_checks(make_service, signalled):
    service = make_service()
    temp = Path(service.env["TMPDIR"])
    service.start_api()
    worktrees = service.data_dir / "worktrees"
    # The embedded worker starts two spares (import_spares) before it takes any repair.
    # Each has a run folder in the temp dir, and a worktree folder with its lease file.
    wait_for(
        "the spares",
        lambda: len(_probe_folders(temp)) == 2 and len(_spare_folders(worktrees)) == 4,
        service.logs,
        timeout_s=120,
    )
    api = service.processes.pop("api")
    # docker stop signals the main process only; systemd's default, the whole group.
    if signalled == "main process":
        os.kill(api.pid, signal.SIGTERM)
    else:
        os.killpg(api.pid, signal.SIGTERM)
    assert api.wait(timeout=60) == SIGTERM_EXIT, service.logs()
    assert _probe_leftovers(temp) == [], service.logs()
    assert _spare_folders(worktrees) == [], service.logs()


def test_sigterm_stops_a_prefork_worker_after_its_children_remove_their_spares(
    make_service, failing_target
):
    service = make_service(embedded_worker="false")
    temp = Path(service.env["TMPDIR"])
    service.start_api()
    # Two processes: the pool's children (billiard) end with os._exit, past any atexit hook.
    worker = service.start("worker", "worker", "-Q", "repair", "--concurrency", "2")
    repo, head, console = failing_target
    with service.client() as client:
        answer = post_failure(
            client, token=CI_TOKEN, repo=repo, head_sha=head, console=console, build_number=5
        )
        report = wait_for_runs(client, answer["url"], timeout_s=180)
    assert [run["state"] for run in report["runs"]] == ["pr_opened"], service.logs()
    worktrees = service.data_dir / "worktrees"
    # After its attempt the child that ran it starts spares for the next one.
    wait_for("the spares", lambda: len(_probe_folders(temp)) >= 1, service.logs, timeout_s=120)
    wait_for(
        "their worktree folders",
        lambda: len(_spare_folders(worktrees)) >= 2,
        service.logs,
        timeout_s=120,
    )
    service.processes.pop("worker")
    os.kill(worker.pid, signal.SIGTERM)  # Celery's warm shutdown, then the children exit
    worker.wait(timeout=60)
    assert _probe_leftovers(temp) == [], service.logs()
    assert _spare_folders(worktrees) == [], service.logs()
