"""Pages keyed by id: ``before`` an id (older rows, newest first) or ``after`` one (newer rows).

No OFFSET: a page reads its ``PAGE_SIZE + 1`` rows from the index on its filter, however deep it
is, and one indexed look-up tells whether there are rows on the other side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from bot.dashboard.filters import PAGE_SIZE


@dataclass(frozen=True)
class Keyset:
    """One page's rows, newest first, and the cursors of the pages either side."""

    rows: list[Any]
    newer: int | None  # ``after`` for the page of newer rows, None when there are none
    older: int | None  # ``before`` for the page of older rows


def _exists(
    session: Session, key: InstrumentedAttribute[int], conditions: list[ColumnElement[bool]]
) -> bool:
    return session.scalar(select(key).where(*conditions).limit(1)) is not None


def keyset_page(
    session: Session,
    query: Select[Any],
    key: InstrumentedAttribute[int],
    conditions: list[ColumnElement[bool]],
    *,
    before: int = 0,
    after: int = 0,
    sort: ColumnElement[int] | None = None,
) -> Keyset:
    """The page of ``query`` (already filtered by ``conditions``) that starts ``before`` or
    ``after`` an id of ``key``; the newest page when neither is set. ``sort`` orders by an
    expression equal to ``key`` that no index provides (``id + 0``): the planner then finds the
    rows through the filter's index and sorts them, instead of walking the key's index."""
    query = query.limit(PAGE_SIZE + 1)
    order = key if sort is None else sort
    if after:
        rows = list(session.execute(query.where(key > after).order_by(order.asc())))
        more_newer, rows = len(rows) > PAGE_SIZE, rows[:PAGE_SIZE][::-1]
        last = _key_of(rows[-1]) if rows else after + 1
        more_older = _exists(session, key, [*conditions, key < last])
        return Keyset(rows, _key_of(rows[0]) if more_newer else None, last if more_older else None)
    rows = list(
        session.execute((query.where(key < before) if before else query).order_by(order.desc()))
    )
    more_older, rows = len(rows) > PAGE_SIZE, rows[:PAGE_SIZE]
    newer = None
    if before:
        first = _key_of(rows[0]) if rows else before - 1
        newer = first if _exists(session, key, [*conditions, key > first]) else None
    return Keyset(rows, newer, _key_of(rows[-1]) if more_older else None)


def _key_of(row: Any) -> int:
    """The id of a row: the ``id`` column of a column select, or of its first entity."""
    found = getattr(row, "id", None)
    return int(found if found is not None else row[0].id)
