"""A multi-row ``INSERT ... ON CONFLICT DO NOTHING RETURNING`` on the DBAPI cursor.

The group-committed intake (``bot.db.group_commit``) stores a few deliveries per batch. Through
SQLAlchemy's Core ``execute`` (its insertmanyvalues path, compiled-cache lookup and result
proxies) that INSERT cost about 1.3 ms of writer-thread CPU per batch of four 8 KB deliveries,
three quarters of it outside sqlite3 (cProfile over 500 batches, bot/db/crud.py before this
module); the writer holds the GIL for that time, which the event loop answering requests then
waits for. Here the statement text is built once per (table, row count, dialect) and the values
go through the columns' own bind processors, so what is stored is exactly what the ORM would
store and read back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

from sqlalchemy import Table
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session

Processor = Callable[[Any], Any] | None


@cache
def _statement(
    table: Table,
    columns: tuple[str, ...],
    rows: int,
    conflict: str,
    returning: tuple[str, ...],
    paramstyle: str,
) -> str:
    placeholder = "?" if paramstyle == "qmark" else "%s"
    one_row = "(" + ", ".join([placeholder] * len(columns)) + ")"
    return (
        f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES "
        + ", ".join([one_row] * rows)
        + f" ON CONFLICT ({conflict}) DO NOTHING RETURNING {', '.join(returning)}"
    )


def _processors(table: Table, columns: tuple[str, ...], dialect: Dialect) -> list[Processor]:
    return [table.c[name].type.dialect_impl(dialect).bind_processor(dialect) for name in columns]


def insert_new_returning(
    session: Session,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    *,
    conflict: str,
    returning: tuple[str, ...],
) -> list[tuple[Any, ...]]:
    """Insert ``rows`` (same keys each) skipping conflicts on ``conflict``; the returned rows.

    Runs in the session's transaction, on its connection; only SQLite (qmark) and psycopg
    (format) parameter styles are supported, the two dialects repairbot runs on.
    """
    if not rows:
        return []
    connection = session.connection()
    dialect = connection.dialect
    if dialect.paramstyle not in ("qmark", "format", "pyformat"):
        raise ValueError(f"unsupported DBAPI parameter style {dialect.paramstyle!r}")
    columns = tuple(rows[0])
    processors = _processors(table, columns, dialect)
    values: list[Any] = []
    for row in rows:
        for name, process in zip(columns, processors, strict=True):
            value = row[name]
            values.append(value if process is None or value is None else process(value))
    sql = _statement(table, columns, len(rows), conflict, returning, dialect.paramstyle)
    cursor = connection.connection.cursor()
    try:
        cursor.execute(sql, values)
        return [tuple(found) for found in cursor.fetchall()]
    finally:
        cursor.close()
