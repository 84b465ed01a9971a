"""Verification routing with real Celery workers on Redis: the GPU queue, the CPU queue, fallback."""

from __future__ import annotations

import subprocess
import time
import uuid

import pytest
from sqlalchemy import select

from bot.db.migrate import upgrade
from bot.db.models import CiFailure, Delivery, Fix, FixComment, RepairRun, Verification
from bot.db.session import session_scope
from bot.pipeline.reconcile.task import reconcile_once
from bot.runner.requests import cancel_verifications, request_verification
from tests.bot.runner.conftest import OPS_FIXED, tiny_repo  # noqa: F401 - the fixture
from tests.conftest import make_settings

pytestmark = pytest.mark.e2e


def _seed_fix(settings, repo, head) -> int:
    finding = {
        "signature": "contract-forward-override",
        "fixer": "rename-forbidden-override",
        "tests": ["tests/test_ops.py::test_add"],
        "gpu_types": ["H100_PCIe"],
    }
    with session_scope(settings.resolved_database_url) as session:
        delivery = Delivery(
            source="ci", key=f"ci:{uuid.uuid4()}", event="ci_failure", action=None, body=b""
        )
        session.add(delivery)
        session.flush()
        report = CiFailure(
            delivery_id=delivery.id, format="console", findings=[finding], failure_count=1
        )
        session.add(report)
        session.flush()
        fix = Fix(
            forge="local",
            repository=str(repo.path),
            dedupe_key=uuid.uuid4().hex,
            signature="s",
            base_sha=repo.base,
            branch="b",
            head_sha=head,
            title="t",
            body="",
            files=["calc/ops.py"],
            diff="",
        )
        session.add(fix)
        session.flush()
        session.add(
            RepairRun(
                report_id=report.id, root_cause="r", signature="s", state="pr_opened", fix_id=fix.id
            )
        )
        return fix.id


def _request(settings, fix_id: int, gpu_types=None) -> int:
    with session_scope(settings.resolved_database_url) as session:
        fix = session.get_one(Fix, fix_id)
        return request_verification(
            session, fix=fix, requested_by="test", default_queue="cpu", gpu_types=gpu_types
        ).id


def _wait_done(settings, ids, *, reconcile=False, timeout_s=240):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if reconcile:
            reconcile_once(settings)
        with session_scope(settings.resolved_database_url) as session:
            rows = [session.get_one(Verification, i) for i in ids]
            if all(row.state not in ("queued", "running") for row in rows):
                return rows
        time.sleep(0.5)
    raise AssertionError("verifications did not finish")


@pytest.fixture
def deployment(tmp_path, make_service):
    broker = f"redis://127.0.0.1:6379/{uuid.uuid4().int % 5 + 1}"
    subprocess.run(["redis-cli", "-u", broker, "FLUSHDB"], check=True, capture_output=True)
    database = f"sqlite:///{tmp_path / 'shared.db'}"
    service = make_service(database_url=database, broker_url=broker, embedded_worker="false")
    settings = make_settings(
        tmp_path / "data",
        database_url=database,
        broker_url=broker,
        verify_fallback_after_s=2.0,
        stale_after_s=600.0,
    )
    upgrade(database)
    from bot.queue.celery_app import configure_celery

    configure_celery(settings)
    return service, settings


def test_requests_go_to_the_queue_of_their_gpu_type(deployment, tiny_repo):  # noqa: F811
    service, settings = deployment
    service.start("gpu-worker", "worker", "-Q", "gpu.H100_PCIe", "-n", "gpu@%h")
    service.start("cpu-worker", "worker", "-Q", "cpu,repair", "-n", "cpu@%h")
    fix_id = _seed_fix(settings, tiny_repo, tiny_repo.commit({"calc/ops.py": OPS_FIXED}))
    on_gpu = _request(settings, fix_id, gpu_types=["H100_PCIe"])
    on_cpu = _request(settings, fix_id, gpu_types=[])
    gpu_row, cpu_row = _wait_done(settings, [on_gpu, on_cpu])
    assert (gpu_row.queue, gpu_row.results["worker"].split("@")[0]) == ("gpu.H100_PCIe", "gpu"), (
        service.logs()
    )
    assert (cpu_row.queue, cpu_row.results["worker"].split("@")[0]) == ("cpu", "cpu")
    assert gpu_row.verdict == cpu_row.verdict == "fixed"
    assert gpu_row.device == "cpu" and gpu_row.on_requested_device is False
    assert "NOT on the requested H100_PCIe" in gpu_row.reason


def test_with_no_gpu_worker_the_fallback_applies_and_the_report_says_so(deployment, tiny_repo):  # noqa: F811
    service, settings = deployment
    service.start("cpu-worker", "worker", "-Q", "cpu,repair", "-n", "cpu@%h")
    fix_id = _seed_fix(settings, tiny_repo, tiny_repo.commit({"calc/ops.py": OPS_FIXED}))
    verification_id = _request(settings, fix_id, gpu_types=["H100_PCIe"])
    (row,) = _wait_done(settings, [verification_id], reconcile=True)
    assert row.options["queues_tried"] == ["gpu.H100_PCIe", "gpu.any", "cpu"], service.logs()
    assert row.queue == "cpu" and row.verdict == "fixed"
    deadline = time.monotonic() + 60  # the report is its own task, right after the verdict
    while True:
        with session_scope(settings.resolved_database_url) as session:
            said = session.scalars(select(FixComment).where(FixComment.fix_id == fix_id)).all()
            run = session.scalars(select(RepairRun).where(RepairRun.fix_id == fix_id)).one()
        if any(c.kind == "comment" for c in said) or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    comment = next(c.body for c in said if c.kind == "comment")
    assert (
        "NOT on the requested H100_PCIe" in comment
        and "| test | before | after | verdict |" in comment
    )
    statuses = [(c.context, c.state) for c in said if c.kind == "status"]
    assert statuses == [("repairbot/verify", "pending"), ("repairbot/verify", "success")]
    assert run.state == "verified"


SLOW_TEST = "import time\nfrom calc import ops\n\n\ndef test_slow():\n    time.sleep(600)\n"


def test_bot_kill_ends_a_running_verification_and_the_worker_carries_on(deployment, tiny_repo):  # noqa: F811
    service, settings = deployment
    service.start("cpu-worker", "worker", "-Q", "cpu,repair", "-n", "cpu@%h")
    slow_fix = _seed_fix(
        settings,
        tiny_repo,
        tiny_repo.commit({"calc/ops.py": OPS_FIXED, "tests/test_slow.py": SLOW_TEST}),
    )
    slow = _request(settings, slow_fix, gpu_types=[])
    deadline = time.monotonic() + 120
    while True:
        with session_scope(settings.resolved_database_url) as session:
            if session.get_one(Verification, slow).state == "running":
                break
        assert time.monotonic() < deadline, service.logs()
        time.sleep(0.3)
    time.sleep(3)  # well inside the test run now
    with session_scope(settings.resolved_database_url) as session:
        cancelled = cancel_verifications(session, fix_id=slow_fix, reason="/bot kill by maintainer")
    assert [v.id for v in cancelled] == [slow]
    good_fix = _seed_fix(settings, tiny_repo, tiny_repo.commit({"calc/ops.py": OPS_FIXED}))
    after = _request(settings, good_fix, gpu_types=[])
    killed, next_one = _wait_done(settings, [slow, after], timeout_s=300)
    assert killed.state == "cancelled" and killed.verdict is None
    assert next_one.state == "done" and next_one.verdict == "fixed"
