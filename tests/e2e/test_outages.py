"""The served API, its reconciler and a real worker through a Redis crash and a PostgreSQL
restart, each a private server of the test's own (the machine's shared ones serve the other
tests meanwhile).

Redis down: deliveries are answered 2xx and stored, /readyz says "degraded", and once Redis is
back the reconciler sends them and the worker processes them. PostgreSQL down: 503 with
Retry-After everywhere; after the restart the same processes accept and process work again.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx
import pytest

from bench.postgres_server import PrivatePostgres
from bot.cli.demo_target import post_failure, wait_for_runs
from bot.intake.webhook_auth import sign
from bot.pipeline.task_base import RepairbotTask
from tests.conftest import CI_TOKEN, SECRET, PrivateRedis, make_settings
from tests.e2e.conftest import wait_for

pytestmark = pytest.mark.e2e
PUSH = {"ref": "refs/heads/main", "after": "a" * 40, "repository": {"id": 1}}


@pytest.fixture
def private_postgres() -> Iterator[PrivatePostgres]:
    server = PrivatePostgres().start()
    yield server
    server.remove()


def _deliver(service, delivery: str) -> httpx.Response:  # type: ignore[no-untyped-def]
    body = json.dumps(PUSH).encode()
    return httpx.post(
        f"{service.url}/webhooks/github",
        content=body,
        timeout=30,
        headers={
            "X-GitHub-Event": "push",
            "X-GitHub-Delivery": delivery,
            "Content-Type": "application/json",
            "X-Hub-Signature-256": sign(SECRET.encode(), body),
        },
    )


def _push_outcomes(service) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """The stored push deliveries by outcome, as /metrics reports them."""
    outcomes: dict[str, float] = {}
    for line in httpx.get(f"{service.url}/metrics", timeout=30).text.splitlines():
        if line.startswith("repairbot_deliveries{") and 'event="push"' in line:
            outcome = line.split('outcome="', 1)[1].split('"', 1)[0]
            outcomes[outcome] = float(line.rsplit(" ", 1)[1])
    return outcomes


def _start_worker(service) -> None:  # type: ignore[no-untyped-def]
    """A ``repairbot worker``, once it consumes: the test stops the database only after the
    worker has migrated it, so that the outage meets a running worker, not a starting one."""
    service.start("worker", "worker", "-Q", "repair")
    log = service.log_dir / "worker.log"
    wait_for("the worker ready", lambda: " ready." in log.read_text(), service.logs, 120)


def _send_past_its_quick_retries(service, task: str, *args: object) -> None:  # type: ignore[no-untyped-def]
    """Send ``task`` to the service's broker as if its five quick retries (``autoretry_for``)
    were spent: only the outage rule (``RepairbotTask.__call__``) can retry it now."""
    from bot.queue.celery_app import app, configure_celery

    configure_celery(make_settings(service.data_dir))  # the service's embedded file broker
    app.send_task(task, args=list(args), retries=RepairbotTask.max_retries)


def _metric(service, name: str) -> float:  # type: ignore[no-untyped-def]
    text = httpx.get(f"{service.url}/metrics", timeout=30).text
    (line,) = [line for line in text.splitlines() if line.startswith(f"{name} ")]
    return float(line.split()[1])


def test_redis_down_work_is_stored_answered_and_processed_once_it_is_back(
    make_service, failing_target, private_redis: PrivateRedis
) -> None:
    service = make_service(broker_url=private_redis.url, embedded_worker="false")
    service.start_api()
    _start_worker(service)
    private_redis.kill()
    answer = _deliver(service, f"push-{uuid.uuid4().hex[:8]}")
    assert answer.status_code == 202, answer.text
    repo, head, console = failing_target
    with service.client() as client:
        report = post_failure(
            client, token=CI_TOKEN, repo=repo, head_sha=head, console=console, build_number=5
        )
        assert client.get(report["url"]).json()["runs"] == []  # stored; its triage not sent
        ready = client.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert (ready.json()["status"], ready.json()["broker"]) == ("degraded", "down")
    assert _metric(service, "repairbot_broker_up") == 0
    assert _metric(service, "repairbot_broker_send_failures_total") >= 2
    assert _push_outcomes(service) == {"stored": 1.0}
    private_redis.start()  # empty: whatever was queued before died with it
    processed = wait_for(
        "the push processed", lambda: "stored" not in _push_outcomes(service), service.logs, 120
    )
    assert processed
    with service.client() as client:
        finished = wait_for_runs(client, report["url"], timeout_s=240)
    assert [run["state"] for run in finished["runs"]] == ["pr_opened"], service.logs()
    assert _metric(service, "repairbot_broker_up") == 1


def test_postgresql_restart_refuses_with_503_then_the_same_processes_carry_on(
    make_service, private_postgres: PrivatePostgres
) -> None:
    url = private_postgres.create_database("service")
    service = make_service(database_url=url, embedded_worker="false", database_retry_after_s="3")
    service.start_api()
    _start_worker(service)
    private_postgres.stop("immediate")
    try:
        refused = _deliver(service, "during-the-restart")
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "3"
        ready = httpx.get(f"{service.url}/readyz", timeout=30)
        assert ready.status_code == 503 and ready.json()["database"] == "down"
        assert httpx.get(f"{service.url}/", timeout=30).status_code == 503
        assert _metric(service, "repairbot_database_up") == 0
        _send_past_its_quick_retries(service, "repairbot.process_delivery", 999_999)
        wait_for(
            "the task that met the outage retried",
            lambda: "retry: Retry in" in (service.log_dir / "worker.log").read_text(),
            service.logs,
            60,
        )
        # The reconciler's passes fail meanwhile (every 0.5 s): wait for one to say so.
        wait_for(
            "a failed reconciler pass",
            lambda: "reconciler pass failed" in (service.log_dir / "api.log").read_text(),
            service.logs,
            60,
        )
    finally:
        private_postgres.start()
    assert _deliver(service, "during-the-restart").status_code == 202  # GitHub's redelivery
    wait_for(
        "the redelivered push processed",
        lambda: _push_outcomes(service) and "stored" not in _push_outcomes(service),
        service.logs,
        120,
    )
    assert all(process.poll() is None for process in service.processes.values())
    assert "raised unexpected" not in (service.log_dir / "worker.log").read_text()
    assert _metric(service, "repairbot_database_up") == 1
