"""Engines and sessions, made once per database URL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, make_url
from sqlalchemy.orm import Session, sessionmaker

Reading = Callable[[], AbstractContextManager[Session]]
"""Opens a reading session (``read_scope`` bound to a database): a handler's read phase."""
Writes = Callable[[Session], str]
"""A handler's write phase: database work only (no network, no git), run in the caller's
transaction; says what it did."""

CHECKPOINT_BYTES = 4 << 20
# An execution option: sessions made with it only read (``read_scope``).
READ_ONLY = "repairbot_read_only"
# PostgreSQL: how long a request waits for a pooled connection when all 30 are checked out (30 s
# by default), which a server that stopped answering can cause; the request then answers 503.
# Twice the URL's connect_timeout (REPAIRBOT_DATABASE_CONNECT_TIMEOUT_S): a wait for a pooled
# connection should not outlast an attempt to make a new one by much.
POOL_TIMEOUTS_PER_CONNECT = 2
DEFAULT_POOL_TIMEOUT_S = 10.0
# A connection to a server that vanished (no reset: a crashed host, a dropped route) fails after
# about 20 s instead of hanging: keepalives while it is idle (the operating system's default
# waits two hours), tcp_user_timeout while a statement's bytes go unacknowledged (15 minutes of
# retransmissions otherwise). A slow query on a live server is not cut: the server acknowledges.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5,
              "keepalives_count": 2, "tcp_user_timeout": 20_000}  # fmt: skip


@cache
def engine_for(url: str) -> Engine:
    """One engine per URL; SQLite gets WAL and a busy timeout so the API and worker share it."""
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    # No JIT: the service's queries are short and indexed, and the planner's estimates (100 rows
    # per set-returning call, a correlated subquery per row) made it compile for 200 ms a query
    # that runs in a few. Custom plans always: after five runs of a prepared statement PostgreSQL
    # may keep a generic plan, blind to the parameters, and a search's LIKE pattern decides
    # whether its trigram index or a scan is right (a generic plan scanned: 13 ms, not 2).
    # pool_pre_ping: after PostgreSQL restarts, a pooled connection is found dead at checkout and
    # replaced (and a disconnect error invalidates the whole pool), so no restart of ours is needed.
    # The connect timeout comes in the URL (Settings.resolved_database_url).
    return create_engine(
        url,
        pool_pre_ping=True,
        pool_size=10,
        max_overflow=20,
        pool_timeout=pool_timeout_s(url),
        connect_args={"options": "-c jit=off -c plan_cache_mode=force_custom_plan", **KEEPALIVES},
    )


def pool_timeout_s(url: str) -> float:
    """How long a request waits for a pooled connection of the engine for ``url``."""
    connect = make_url(url).query.get("connect_timeout")
    if not isinstance(connect, str) or not connect.isdigit():
        return DEFAULT_POOL_TIMEOUT_S
    return POOL_TIMEOUTS_PER_CONNECT * float(connect)


def _sqlite_pragmas(connection: Any, _record: object) -> None:
    # pysqlite's own transaction handling defers BEGIN and breaks SAVEPOINT; we issue BEGIN.
    connection.isolation_level = None
    cursor = connection.cursor()
    # SQLite's default page, set for new databases only (WAL fixes the size after). 64 KiB pages
    # store a megabyte body in fewer frames, but every commit then writes whole 64 KiB frames
    # for each B-tree page it touched, which doubles the cost of the intake's small batches.
    cursor.execute("PRAGMA page_size=4096")
    cursor.execute("PRAGMA journal_mode=WAL")
    # A checkpoint runs inside the COMMIT that crosses this much WAL, stalling that commit's
    # whole batch: 4 MiB keeps each stall a few milliseconds, whatever the page size.
    page_size = cursor.execute("PRAGMA page_size").fetchone()[0]
    cursor.execute(f"PRAGMA wal_autocheckpoint={max(1, CHECKPOINT_BYTES // page_size)}")
    # FULL: a commit returns only once the WAL is on disk, so an acknowledged request survives a
    # power cut too. Group commit (bot.db.group_commit) pays that fsync once per batch.
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    if connection.get_execution_options().get(READ_ONLY):
        # Deferred: in WAL mode a reader never holds the write lock, so a dashboard page or a
        # /metrics scrape on a large database does not stall the intake's writer.
        connection.exec_driver_sql("BEGIN")
        return
    # Take the write lock up front: a deferred transaction that reads, then writes, fails at once
    # with SQLITE_BUSY when another writer committed in between, instead of waiting its turn.
    connection.exec_driver_sql("BEGIN IMMEDIATE")


@cache
def session_factory(url: str) -> sessionmaker[Session]:
    """The session factory bound to the engine for ``url``."""
    return sessionmaker(engine_for(url), expire_on_commit=False)


class ReadOnlySessionError(RuntimeError):
    """ORM changes made in a reading session, which never commits them."""


def _refuse_writes(session: Session, *_: object) -> None:
    changed = len(session.new) + len(session.dirty) + len(session.deleted)
    raise ReadOnlySessionError(
        f"{changed} change(s) in a reading session: write in session_scope, not read_scope"
    )


@cache
def read_session_factory(url: str) -> sessionmaker[Session]:
    """Sessions for work that only reads: on SQLite their transactions take no write lock.

    They never commit, so an ORM change made in one raises (at its flush) instead of vanishing.
    """
    factory = sessionmaker(
        engine_for(url).execution_options(**{READ_ONLY: True}), expire_on_commit=False
    )
    event.listen(factory, "before_flush", _refuse_writes)
    return factory


@contextmanager
def read_scope(url: str) -> Iterator[Session]:
    """A session that only reads (``read_session_factory``), closed at the end of the block."""
    session = read_session_factory(url)()
    try:
        yield session
    finally:
        session.rollback()  # nothing to keep: ends the read transaction
        session.close()


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
