"""Engines and sessions, made once per database URL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker


@cache
def engine_for(url: str) -> Engine:
    """One engine per URL; SQLite gets WAL and a busy timeout so the API and worker share it."""
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin_immediate)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def _sqlite_pragmas(connection: Any, _record: object) -> None:
    # pysqlite's own transaction handling defers BEGIN and breaks SAVEPOINT; we issue BEGIN.
    connection.isolation_level = None
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_begin_immediate(connection: Connection) -> None:
    # Take the write lock up front: a deferred transaction that reads, then writes, fails at once
    # with SQLITE_BUSY when another writer committed in between, instead of waiting its turn.
    connection.exec_driver_sql("BEGIN IMMEDIATE")


@cache
def session_factory(url: str) -> sessionmaker[Session]:
    """The session factory bound to the engine for ``url``."""
    return sessionmaker(engine_for(url), expire_on_commit=False)


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    """A session that commits on success and rolls back on error."""
    session = session_factory(url)()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
