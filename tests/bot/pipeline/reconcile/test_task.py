"""The reconciler after a Redis outage: what the API stored while the broker was dead (a GitHub
delivery, a CI report) and a run whose repair message died with it are sent once Redis is back.

Real Redis (a private one, killed and started again), on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import redis
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from bot.app import create_app
from bot.db.models import CiFailure, Delivery, RepairRun, utcnow
from bot.db.session import session_scope
from bot.intake.webhook_auth import sign
from bot.pipeline.reconcile.task import reconcile_once
from bot.queue.breaker import BREAKER
from bot.queue.names import REPAIR_QUEUE
from tests.conftest import CI_TOKEN, SECRET, PrivateRedis

CONSOLE = Path(__file__).parents[3] / "fixtures" / "logs" / "py311" / "combined.console.txt"
PUSH = json.dumps({"ref": "refs/heads/main", "after": "a" * 40, "repository": {"id": 1}}).encode()


def _queued(server: PrivateRedis) -> list[str]:
    client = redis.Redis(port=server.port)
    return sorted(json.loads(raw)["headers"]["task"] for raw in client.lrange(REPAIR_QUEUE, 0, -1))


def _accepted_while_redis_is_down(client: TestClient) -> int:
    """A GitHub delivery and a CI report, each answered 202 and stored; the report's id."""
    delivered = client.post(
        "/webhooks/github",
        content=PUSH,
        headers={
            "X-GitHub-Event": "push",
            "X-GitHub-Delivery": "while-redis-is-down",
            "Content-Type": "application/json",
            "X-Hub-Signature-256": sign(SECRET.encode(), PUSH),
        },
    )
    assert delivered.status_code == 202, delivered.text
    reported = client.post(
        "/api/v1/ci-failures?pipeline=p&build_number=1&repository=/srv/x&head_sha=abcdef1",
        content=CONSOLE.read_bytes(),
        headers={"Authorization": f"Bearer {CI_TOKEN}"},
    )
    assert reported.status_code == 202, reported.text
    return int(reported.json()["report_id"])


def test_what_was_stored_while_redis_was_down_is_sent_once_it_is_back(
    settings, task_settings, private_redis: PrivateRedis
) -> None:
    settings = task_settings(settings.model_copy(update={"broker_url": private_redis.url}))
    private_redis.kill()
    failures = BREAKER.failures
    with TestClient(create_app(settings)) as client:
        report_id = _accepted_while_redis_is_down(client)
        ready = client.get("/readyz")
        assert ready.status_code == 200 and ready.json()["status"] == "degraded"
        assert ready.json()["broker"] == "down"
        metrics = client.get("/metrics").text
        assert "repairbot_broker_up 0.0" in metrics
    assert BREAKER.failures >= failures + 2  # process_delivery's and triage's sends
    long_ago = utcnow() - timedelta(minutes=5)
    with session_scope(settings.resolved_database_url) as session:
        # A run whose repair message was in Redis when it died (triaged before the outage).
        session.add(
            RepairRun(report_id=report_id, root_cause="r", signature="s", updated_at=long_ago)
        )
        # Stale: the reconciler leaves work alone for stale_after_s after it was sent.
        session.execute(update(Delivery).values(dispatched_at=long_ago))
        session.execute(update(CiFailure).values(triage_sent_at=long_ago))
        assert session.scalars(select(Delivery.outcome).where(Delivery.source == "github")).all()
    private_redis.start()
    BREAKER.reset()  # the API's pause after its failed sends ends (seconds) before a pass
    reconcile_once(settings)
    assert _queued(private_redis) == [
        "repairbot.process_delivery",
        "repairbot.repair",
        "repairbot.triage",
    ]
