"""Pages keyed by id: ``before`` an id (older rows, newest first) or ``after`` one (newer rows).

No OFFSET: a page reads its ``PAGE_SIZE + 1`` rows from the index on its filter, however deep it
is, and one indexed look-up tells whether there are rows on the other side.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy import ColumnElement, Select, SQLColumnExpression, select
from sqlalchemy.orm import Session

from bot.dashboard.filters import PAGE_SIZE


@dataclass(frozen=True)
class Keyset:
    """One page's rows, newest first, and the cursors of the pages either side."""

    rows: list[Any]
    newer: int | None  # ``after`` for the page of newer rows, None when there are none
    older: int | None  # ``before`` for the page of older rows


@dataclass(frozen=True)
class Unordered:
    """How to page rows that the filter's index finds but not in key order (a trigram index).
    ``sort`` is an expression equal to the key that no index provides (``id + 0``): the planner
    then takes the index's matches and sorts them, instead of walking the key's index and testing
    every row on the way. Rows beyond a page are first looked for within ``near`` keys of it
    through the key's index (where a common match is), then among all matches."""

    sort: ColumnElement[int]
    near: int


def _any_beyond(
    session: Session,
    key: SQLColumnExpression[int],
    conditions: list[ColumnElement[bool]],
    bound: int,
    *,
    newer: bool,
    unordered: Unordered | None,
) -> bool:
    beyond = key > bound if newer else key < bound
    if unordered is None:
        return session.scalar(select(key).where(*conditions, beyond).limit(1)) is not None
    near = key < bound + unordered.near if newer else key > bound - unordered.near
    nearest = key.asc() if newer else key.desc()
    if session.scalar(select(key).where(*conditions, beyond, near).order_by(nearest).limit(1)):
        return True
    order = unordered.sort.asc() if newer else unordered.sort.desc()
    return (
        session.scalar(select(key).where(*conditions, beyond).order_by(order).limit(1)) is not None
    )


def keyset_page(
    session: Session,
    query: Select[Any],
    key: SQLColumnExpression[int],
    conditions: list[ColumnElement[bool]],
    *,
    before: int = 0,
    after: int = 0,
    unordered: Unordered | None = None,
    floor: int | None = None,
) -> Keyset:
    """The page of ``query`` (already filtered by ``conditions``) that starts ``before`` or
    ``after`` an id of ``key``; the newest page when neither is set. ``unordered``: the filter's
    index does not read rows in key order (see ``Unordered``). ``floor`` reads the page among keys
    from ``floor`` up only, in the key's order (the rows either side are still looked for among
    all): a page found there is the page; one cut short by it is not."""
    query = query.limit(PAGE_SIZE + 1)
    order = key if unordered is None else unordered.sort
    if floor is not None:
        query, order = query.where(key >= floor), key
    beyond = partial(_any_beyond, session, key, conditions, unordered=unordered)
    if after:
        rows = list(session.execute(query.where(key > after).order_by(order.asc())))
        more_newer, rows = len(rows) > PAGE_SIZE, rows[:PAGE_SIZE][::-1]
        last = _key_of(rows[-1]) if rows else after + 1
        more_older = beyond(last, newer=False)
        return Keyset(rows, _key_of(rows[0]) if more_newer else None, last if more_older else None)
    rows = list(
        session.execute((query.where(key < before) if before else query).order_by(order.desc()))
    )
    more_older, rows = len(rows) > PAGE_SIZE, rows[:PAGE_SIZE]
    newer = None
    if before:
        first = _key_of(rows[0]) if rows else before - 1
        newer = first if beyond(first, newer=True) else None
    return Keyset(rows, newer, _key_of(rows[-1]) if more_older else None)


def _key_of(row: Any) -> int:
    """The id of a row: its ``id`` column, or its first entity's."""
    found = getattr(row, "id", None)
    return int(found if found is not None else row[0].id)
