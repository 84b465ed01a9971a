"""A real failing target → the served API → exactly one PR whose branch makes the tests pass."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.cli.demo_target import (
    post_failure,
    run_tests,
    wait_for_runs,
    wait_for_verification,
)
from bot.git import fresh_worktree
from tests.conftest import CI_TOKEN, drop_all_tables

pytestmark = pytest.mark.e2e


def _repair(service, target, build_number: int, timeout_s: float = 180):
    repo, head, console = target
    with service.client() as client:
        answer = post_failure(
            client,
            token=CI_TOKEN,
            repo=repo,
            head_sha=head,
            console=console,
            build_number=build_number,
        )
        try:
            report = wait_for_runs(client, answer["url"], timeout_s=timeout_s)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\n{service.logs()}") from exc
        fixes = client.get("/api/v1/fixes").json()
    return answer, report, fixes


def _assert_branch_passes(repo: Path, branch: str, tmp_path: Path) -> None:
    checkout = fresh_worktree(repo, tmp_path / "checkout", branch)
    after = run_tests(checkout)
    assert after.returncode == 0, after.console.decode(errors="replace")[-3000:]


def test_embedded_default_repairs_once_and_verifies(make_service, failing_target, tmp_path):
    service = make_service(verify_fallback_after_s="1")
    service.start_api()
    answer, report, fixes = _repair(service, failing_target, build_number=1)
    assert [run["state"] for run in report["runs"]] == ["pr_opened"], service.logs()
    assert len(fixes) == 1
    fix = fixes[0]
    assert fix["branch"].startswith("repairbot/contract-forward-override/")
    # The link names where this service serves (a free port), not a default one.
    assert fix["url"] == f"{service.url}/fixes/{fix['id']}"
    _assert_branch_passes(failing_target[0], fix["branch"], tmp_path)
    with service.client() as client:
        verification = wait_for_verification(client, fix["id"], timeout_s=600)
        deadline = time.monotonic() + 60  # the report is its own task, right after the verdict
        while True:
            detail = client.get(f"/api/v1/fixes/{fix['id']}").json()
            if (
                any(c["kind"] == "comment" for c in detail["comments"])
                or time.monotonic() > deadline
            ):
                break
            time.sleep(0.3)
        runs = client.get(answer["url"]).json()["runs"]
    assert verification["verdict"] == "fixed", verification
    assert verification["device"] == "cpu" and verification["on_requested_device"] is False
    assert verification["queue"] in ("gpu.any", "cpu")
    comment = next(c["body"] for c in detail["comments"] if c["kind"] == "comment")
    assert "NOT on the requested H100_PCIe" in comment and "| fixed |" in comment
    assert runs[0]["state"] == "verified"

    again, _, fixes_after_repost = _repair(service, failing_target, build_number=1)
    assert again["duplicate"] is True and again["report_id"] == answer["report_id"]
    _, rerun, fixes_after_new_build = _repair(service, failing_target, build_number=2)
    assert [run["state"] for run in rerun["runs"]] == ["duplicate"]
    assert len(fixes_after_repost) == len(fixes_after_new_build) == 1


def _fresh_broker(kind: str) -> tuple[str, Callable[[], None]]:
    """An empty Redis database or RabbitMQ virtual host for one test, and its cleanup."""
    if kind == "redis":
        url = f"redis://127.0.0.1:6379/{uuid.uuid4().int % 10 + 5}"
        subprocess.run(["redis-cli", "-u", url, "FLUSHDB"], check=True, capture_output=True)
        return url, lambda: None
    vhost = f"repairbot-{uuid.uuid4().hex[:8]}"
    subprocess.run(["rabbitmqctl", "add_vhost", vhost], check=True, capture_output=True, timeout=60)
    subprocess.run(
        ["rabbitmqctl", "set_permissions", "-p", vhost, "guest", ".*", ".*", ".*"],
        check=True,
        capture_output=True,
        timeout=60,
    )

    def cleanup() -> None:
        subprocess.run(["rabbitmqctl", "delete_vhost", vhost], capture_output=True, timeout=60)

    return f"amqp://guest:guest@127.0.0.1:5672/{vhost}", cleanup


@pytest.mark.parametrize("broker_kind", ["redis", "rabbitmq"])
def test_postgres_a_real_broker_and_a_separate_worker(
    make_service, failing_target, postgres_url, tmp_path, broker_kind
):
    drop_all_tables(postgres_url)
    broker, cleanup = _fresh_broker(broker_kind)
    try:
        service = make_service(
            database_url=postgres_url, broker_url=broker, embedded_worker="false"
        )
        service.start_api()
        service.start("worker", "worker", "-Q", "repair")
        _, report, fixes = _repair(service, failing_target, build_number=10)
        assert [run["state"] for run in report["runs"]] == ["pr_opened"], service.logs()
        assert len(fixes) == 1
        _assert_branch_passes(failing_target[0], fixes[0]["branch"], tmp_path)
        service.stop_all()
    finally:
        cleanup()


def test_worker_killed_mid_repair_resumes_with_exactly_one_pr(
    make_service, failing_target, tmp_path
):
    # The kill must land in the middle of the repair: after the patch, before the PR. The
    # workers start through tests.held_repair, which holds each repair there while `pause`
    # exists; the worker and the stage are otherwise the real ones.
    pause = tmp_path / "pause-before-pr"
    pause.touch()
    service = make_service(embedded_worker="false")
    service.hold_repairs(pause)
    service.start_api()
    worker = service.start("worker", "worker", "-Q", "repair")
    repo, head, console = failing_target
    with service.client() as client:
        answer = post_failure(
            client, token=CI_TOKEN, repo=repo, head_sha=head, console=console, build_number=77
        )
        deadline = time.monotonic() + 120
        while (
            client.get(answer["url"]).json()["runs"][:1] == []
            or client.get(answer["url"]).json()["runs"][0]["state"] != "patched"
        ):
            assert time.monotonic() < deadline, service.logs()
            time.sleep(0.1)
        os.killpg(worker.pid, signal.SIGKILL)  # kill -9 in the middle of the repair
        worker.wait(timeout=30)
        service.processes.pop("worker")
        pause.unlink()
        service.start("worker2", "worker", "-Q", "repair")
        report = wait_for_runs(client, answer["url"], timeout_s=180)
        fixes = client.get("/api/v1/fixes").json()
    assert [run["state"] for run in report["runs"]] == ["pr_opened"], service.logs()
    assert len(fixes) == 1
    assert report["runs"][0]["attempts"] >= 2
