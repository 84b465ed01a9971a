"""A reading session (``read_scope``, what the dashboard, /metrics and /readyz get) never holds
SQLite's write lock, so a page that takes 100 ms to render does not hold up the intake's writer
for as long; a writing session (``session_scope``) takes the lock up front (BEGIN IMMEDIATE)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from bot.db.migrate import upgrade
from bot.db.models import Delivery
from bot.db.session import ReadOnlySessionError, read_scope, session_scope


@pytest.fixture
def database(tmp_path: Path) -> tuple[str, Path]:
    """A migrated SQLite database: its URL and its file."""
    path = tmp_path / "repairbot.db"
    url = f"sqlite:///{path}"
    upgrade(url)
    return url, path


def take_the_write_lock(path: Path) -> None:
    """BEGIN IMMEDIATE on a connection of its own that does not wait: raises if it is held."""
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
    finally:
        other.close()


def test_a_reading_session_leaves_the_write_lock_free(database: tuple[str, Path]) -> None:
    url, path = database
    with read_scope(url) as session:
        session.execute(text("SELECT count(*) FROM deliveries")).one()  # its transaction is open
        take_the_write_lock(path)


def test_a_change_made_in_a_reading_session_raises_instead_of_vanishing(
    database: tuple[str, Path],
) -> None:
    url, _ = database
    with pytest.raises(ReadOnlySessionError, match="1 change"), read_scope(url) as session:
        session.add(Delivery(source="github", key="k", event="e", action=None, body=b"{}"))
        session.flush()
    with read_scope(url) as session:
        assert session.query(Delivery).count() == 0


def test_a_writing_session_holds_it_from_its_first_statement(database: tuple[str, Path]) -> None:
    url, path = database
    with session_scope(url) as session:
        session.execute(text("SELECT count(*) FROM deliveries")).one()
        with pytest.raises(sqlite3.OperationalError, match="database is locked"):
            take_the_write_lock(path)
    take_the_write_lock(path)  # released at the end of the block


@pytest.mark.parametrize("path", ["/readyz", "/metrics", "/", "/api/v1/fixes"])
def test_the_routes_that_read_answer_while_the_write_lock_is_held(
    tmp_path: Path, path: str
) -> None:
    """With BEGIN IMMEDIATE these would wait out the 30 s busy timeout, then fail."""
    from fastapi.testclient import TestClient

    from bot.app import create_app
    from tests.conftest import make_settings

    settings = make_settings(tmp_path / "data")  # the embedded default: SQLite
    upgrade(settings.resolved_database_url)
    holder = sqlite3.connect(settings.resolved_database_url.removeprefix("sqlite:///"))
    holder.isolation_level = None
    with TestClient(create_app(settings)) as client:
        holder.execute("BEGIN IMMEDIATE")
        try:
            assert client.get(path).status_code == 200
        finally:
            holder.execute("ROLLBACK")
            holder.close()
