"""The Alembic history builds the schema the models describe, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time

import pytest
from alembic import command
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from bench.postgres_server import PrivatePostgres
from bot.db.migrate import alembic_config, upgrade, upgrade_when_reachable
from bot.db.session import engine_for, session_scope
from tests.bot.dashboard import seed


def test_migrations_match_the_models(settings):
    url = settings.resolved_database_url
    upgrade(url)  # a second upgrade is a no-op
    config = alembic_config(url)
    with engine_for(url).begin() as connection:
        config.attributes["connection"] = connection
        command.check(config)  # raises when autogenerate would find a difference


def test_postgresql_compresses_delivery_bodies_with_lz4(settings):
    """Large bodies come compressed already (zstd, bot.db.body_codec): PostgreSQL must not pass
    them through pglz (that cost more server CPU than storing the report). SQLite has no such
    setting."""
    url = settings.resolved_database_url
    if not url.startswith("postgresql"):
        assert engine_for(url).dialect.name == "sqlite"
        return
    query = text(
        "SELECT attcompression, attstorage FROM pg_attribute "
        "WHERE attrelid = 'deliveries'::regclass AND attname = 'body'"
    )
    with engine_for(url).connect() as connection:
        compression, storage = connection.execute(query).one()
    # A server built without LZ4 would keep them as given ("", "e"); this machine's has LZ4.
    assert (compression, storage) == ("l", "x")


@pytest.mark.parametrize("settings", ["postgresql"], indirect=True)
def test_postgresql_search_table_is_filled_from_the_rows_already_there(settings):
    """Migration 0015 moves PostgreSQL's search from an index on ``fixes`` (0014) to a table of
    its own, filled from the existing fix PRs; going back restores 0014's index."""
    url = settings.resolved_database_url
    config = alembic_config(url)
    with engine_for(url).begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0014")
    with session_scope(url) as session:
        seed.fix(session, n=1, title="Rename EpsilonWorker.forward")
    upgrade(url)
    with engine_for(url).connect() as connection:
        found = connection.execute(
            text("SELECT id FROM fixes_search WHERE text LIKE '%epsilonworker%'")
        ).all()
        indexes = connection.execute(
            text("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'ix_fixes_search%'")
        ).all()
    assert len(found) == 1 and indexes == [("ix_fixes_search_text",)]
    with engine_for(url).begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0014")
        restored = connection.execute(
            text("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'ix_fixes_search%'")
        ).all()
    assert restored == [("ix_fixes_search",)]
    upgrade(url)


@pytest.fixture
def stopped_postgres():
    """A PostgreSQL of the test's own, created and then stopped (the shared one never stops)."""
    server = PrivatePostgres().start()
    url = server.create_database("repairbot")
    server.stop()
    yield server, url
    server.remove()


def test_a_process_starting_during_an_outage_waits_for_the_database(stopped_postgres):
    server, url = stopped_postgres
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    coming_back = threading.Timer(1.5, server.start)
    coming_back.start()
    upgrade_when_reachable(url, wait_s=60, sleep=sleep)
    coming_back.join()
    assert waits, "it never had to wait: the server was up already"
    with engine_for(url).connect() as connection:
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar_one()


def test_an_outage_longer_than_the_wait_is_an_error(stopped_postgres):
    _, url = stopped_postgres
    with pytest.raises(OperationalError):
        upgrade_when_reachable(url, wait_s=1)
