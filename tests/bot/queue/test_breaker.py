"""Sends to a Redis that was killed: the request's commit is not failed, the tasks are counted,
and sends pause for a while instead of each request waiting out the dead broker."""

from __future__ import annotations

import json
from pathlib import Path

import redis

from bot.db.migrate import upgrade
from bot.db.session import session_scope
from bot.queue.breaker import BREAKER, SendBreaker
from bot.queue.names import REPAIR_QUEUE
from bot.queue.starts import start_triage
from tests.conftest import PrivateRedis, make_settings


def _queued(server: PrivateRedis) -> list[str]:
    client = redis.Redis(port=server.port)
    return [json.loads(raw)["headers"]["task"] for raw in client.lrange(REPAIR_QUEUE, 0, -1)]


def test_a_killed_redis_fails_a_send_once_then_sends_pause(
    tmp_path: Path, private_redis: PrivateRedis, task_settings
) -> None:
    settings = task_settings(
        make_settings(
            tmp_path / "data", broker_url=private_redis.url, broker_pause_after_failure_s=3600
        )
    )
    upgrade(settings.resolved_database_url)
    BREAKER.reset()
    with session_scope(settings.resolved_database_url) as session:
        start_triage(session, 1)
    assert _queued(private_redis) == ["repairbot.triage"] and not BREAKER.paused()
    private_redis.kill()
    before = BREAKER.failures
    with session_scope(settings.resolved_database_url) as session:  # commits: nothing raised
        start_triage(session, 2)
        start_triage(session, 3)
    assert BREAKER.failures == before + 2 and BREAKER.paused()
    with session_scope(settings.resolved_database_url) as session:
        start_triage(session, 4)  # skipped: not another wait on the dead broker
    assert BREAKER.failures == before + 3
    private_redis.start()  # empty: what was queued died with it (the reconciler re-sends)
    BREAKER.reset()  # the pause ends (an hour here, so that the test decides when)
    with session_scope(settings.resolved_database_url) as session:
        start_triage(session, 5)
    assert _queued(private_redis) == ["repairbot.triage"]
    assert BREAKER.failures == before + 3


def test_a_pause_of_zero_never_skips() -> None:
    breaker = SendBreaker(pause_s=0)
    breaker.failed(2)
    assert breaker.failures == 2 and not breaker.paused()
