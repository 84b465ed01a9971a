"""The periodic reads of ``deliveries`` (the reconciler's lookup, /metrics' counts) are served by
``ix_deliveries_pending``, not a scan of the table: on SQLite a scan reads each large body's
overflow pages, inside a transaction that holds the write lock the intake's writer needs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.orm import Session

from bot.db.crud import count_by, undispatched_deliveries
from bot.db.migrate import upgrade
from bot.db.models import Delivery
from bot.db.session import engine_for, session_scope

INDEX = "ix_deliveries_pending"


@contextmanager
def executed(url: str) -> Iterator[list[tuple[str, Any]]]:
    """Every statement (and its parameters) run on ``url``'s engine inside the block."""
    statements: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, sql: str, params: Any, *_: Any) -> None:
        statements.append((sql, params))

    engine = engine_for(url)
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", record)


def plan_of(url: str, read: Callable[[Session], object]) -> str:
    """The query plan of the one SELECT that ``read`` runs, as the database prints it."""
    with session_scope(url) as session, executed(url) as statements:
        read(session)
    (sql, params), *_ = [s for s in statements if s[0].lstrip().upper().startswith("SELECT")]
    with engine_for(url).connect() as connection:
        if connection.dialect.name == "sqlite":
            rows = connection.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params).all()
            return " / ".join(str(row[-1]) for row in rows)
        # An empty table is cheapest to scan: ask whether the index can serve the query at all.
        connection.execute(text("SET enable_seqscan = off"))
        rows = connection.exec_driver_sql("EXPLAIN " + sql, params).all()
        return " / ".join(str(row[0]) for row in rows)


def test_the_reconcilers_lookup_reads_the_index(settings) -> None:
    url = settings.resolved_database_url
    upgrade(url)
    plan = plan_of(url, lambda s: undispatched_deliveries(s, older_than=timedelta(seconds=120)))
    assert INDEX in plan, plan
    assert "SCAN deliveries " not in plan + " " and "Seq Scan" not in plan, plan


def test_the_metrics_counts_read_the_index_alone(settings) -> None:
    url = settings.resolved_database_url
    upgrade(url)
    plan = plan_of(
        url, lambda s: count_by(s, Delivery.id, Delivery.source, Delivery.event, Delivery.outcome)
    )
    assert INDEX in plan, plan
    if engine_for(url).dialect.name == "sqlite":
        assert "COVERING INDEX" in plan, plan  # never the rows (nor their bodies)
    # PostgreSQL keeps large bodies out of line (TOAST): its rows stay small either way.
