"""Which errors mean "the database server cannot be reached": real errors, from a real
PostgreSQL port nobody listens on and a real SQLite database."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.pool import QueuePool

from bench.service import free_port
from bot.db.outage import API_UNAVAILABLE, database_unreachable


def _raised(url: str, sql: str = "SELECT 1") -> Exception:
    engine = create_engine(url)
    try:
        with pytest.raises(Exception) as raised, engine.connect() as connection:
            connection.execute(text(sql))
        return raised.value
    finally:
        engine.dispose()


def test_a_refused_postgresql_connection_is_unreachable() -> None:
    refused = _raised(f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/x")
    assert isinstance(refused, OperationalError) and database_unreachable(refused)
    assert isinstance(refused, API_UNAVAILABLE)


def test_sqlite_errors_are_not_waited_out(tmp_path: Path) -> None:
    missing = _raised(f"sqlite:///{tmp_path / 'db'}", "SELECT * FROM no_such_table")
    assert isinstance(missing, OperationalError) and not database_unreachable(missing)
    assert isinstance(missing, API_UNAVAILABLE)  # the API still answers 503, not 500


def test_no_pooled_connection_in_time_is_unreachable(tmp_path: Path) -> None:
    engine = create_engine(
        f"sqlite:///{tmp_path / 'db'}", poolclass=QueuePool, pool_size=1, max_overflow=0,
        pool_timeout=0.01,
    )  # fmt: skip
    with engine.connect(), pytest.raises(PoolTimeoutError) as raised:
        engine.connect()
    engine.dispose()
    assert database_unreachable(raised.value) and isinstance(raised.value, API_UNAVAILABLE)


@pytest.mark.parametrize(
    ("server_error", "waited_out"),
    [
        ("AdminShutdown", True),  # 57P01: the server is shutting down (a restart)
        ("CannotConnectNow", True),  # 57P03: still starting
        ("TooManyConnections", True),  # 53300
        ("DeadlockDetected", True),  # 40P01
        ("DiskFull", False),  # 53100: the same statement fails again
        ("ProgramLimitExceeded", False),  # 54000
        ("QueryCanceled", False),  # 57014: a statement timeout
    ],
)
def test_server_errors_are_waited_out_only_when_they_pass(
    server_error: str, waited_out: bool
) -> None:
    """What the server said, by its SQLSTATE class: a task retried without limit on a full disk
    would run every minute forever."""
    import psycopg.errors

    orig = getattr(psycopg.errors, server_error)("as the server says it")
    assert isinstance(orig, psycopg.OperationalError)
    exc = OperationalError("SELECT 1", {}, orig)
    assert database_unreachable(exc) is waited_out
