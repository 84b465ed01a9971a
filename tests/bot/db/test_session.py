"""The PostgreSQL engine's bounds on waiting for a server that does not answer."""

from __future__ import annotations

from pathlib import Path

from bot.db.session import engine_for
from tests.conftest import make_settings


def test_the_pool_waits_twice_the_connect_timeout(tmp_path: Path, postgres_url: str) -> None:
    settings = make_settings(
        tmp_path / "data", database_url=postgres_url, database_connect_timeout_s=3
    )
    url = settings.resolved_database_url
    assert url.endswith("connect_timeout=3")
    engine = engine_for(url)
    assert engine.pool.timeout() == 6  # type: ignore[attr-defined]
    assert engine.url.query["connect_timeout"] == "3"
    engine.dispose()
