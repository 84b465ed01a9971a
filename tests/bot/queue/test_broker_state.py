"""The /readyz and /metrics ping of the broker, against a real Redis, killed."""

from __future__ import annotations

from pathlib import Path

from bot.queue.broker_state import broker_state
from tests.conftest import PrivateRedis, make_settings


def test_up_down_and_embedded(tmp_path: Path, private_redis: PrivateRedis) -> None:
    on_redis = make_settings(tmp_path / "data", broker_url=private_redis.url)
    assert broker_state(on_redis) == "up"
    private_redis.kill()
    assert broker_state(on_redis) == "down"
    assert broker_state(make_settings(tmp_path / "data")) == "embedded"
