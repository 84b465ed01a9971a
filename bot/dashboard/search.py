"""Free-text search of the fix PR list: the typed text as a case-insensitive substring of a fix
PR's title, repository, branch or violations, read from the search table kept beside ``fixes``.

SQLite: an FTS5 trigram table (migration 0014), which hands its matches over in id order, so a
page is its first 51 matches whatever their number. PostgreSQL: the lowered text in a narrow
table (migration 0015) with a pg_trgm index, which finds matches but not in order: a page is
first looked for among the newest ``SEARCH_WINDOW`` ids (a common term fills it there), else
all matches are found through the index and sorted (a term whose matches are few or old). Where
the database has neither (SQLite without the trigram tokenizer), the columns are scanned.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, partial

from sqlalchemy import (
    ColumnElement,
    Integer,
    SQLColumnExpression,
    column,
    func,
    label,
    literal_column,
    or_,
    select,
    table,
)
from sqlalchemy import Text as TextType
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from bot.dashboard.filters import FixFilters
from bot.dashboard.keyset import Keyset, Unordered, keyset_page
from bot.db.models import Fix

SEARCH_TABLE = "fixes_search"
SEARCH_WINDOW = 5_000  # PostgreSQL looks for a page among the newest this many ids first
TRIGRAM = 3  # shorter text has no trigram to look up: it is scanned for
ESCAPE = "/"

_fts = table(SEARCH_TABLE, column("rowid", Integer))
_lowered = table(SEARCH_TABLE, column("id", Integer), column("text", TextType))


@dataclass(frozen=True)
class Matches:
    """The ids a search matches: ``key`` is the id column, ``conditions`` select the matches
    (with the page's other filters); ``ordered`` is whether the database reads them in id order
    from its index (FTS5), so that no window or sort is needed."""

    key: SQLColumnExpression[int]
    conditions: list[ColumnElement[bool]]
    ordered: bool


def like_pattern(q: str) -> str:
    """``q`` as a LIKE pattern matching it anywhere, its wildcards escaped with ``ESCAPE``."""
    escaped = q.replace(ESCAPE, ESCAPE * 2).replace("%", ESCAPE + "%").replace("_", ESCAPE + "_")
    return f"%{escaped}%"


def matches(session: Session, q: str, others: list[ColumnElement[bool]]) -> Matches:
    """How this database finds the fix PRs matching ``q`` that also meet ``others``."""
    if session.get_bind().dialect.name == "postgresql":
        found = _lowered.c.text.like(func.lower(like_pattern(q)), escape=ESCAPE)
        return _in_table(_lowered.c.id, found, others, ordered=False)
    if len(q) >= TRIGRAM and _has_fts_table(session):
        phrase = '"' + q.replace('"', '""') + '"'  # one FTS5 string: the text as typed
        found = literal_column(SEARCH_TABLE).op("MATCH")(phrase)
        return _in_table(_fts.c.rowid, found, others, ordered=True)
    scanned = or_(
        *(
            searched.icontains(q, autoescape=True)
            for searched in (Fix.title, Fix.repository, Fix.branch, Fix.violations.cast(TextType))
        )
    )
    return Matches(Fix.id, [scanned, *others], ordered=True)


def _in_table(
    key: SQLColumnExpression[int],
    found: ColumnElement[bool],
    others: list[ColumnElement[bool]],
    *,
    ordered: bool,
) -> Matches:
    if not others:
        return Matches(key, [found], ordered)
    # EXISTS, not a join: the search table stays the outer loop, read in its order, and each
    # match is looked up by id. As a join SQLite drove from the other filter's index and ran
    # the FTS query once per row it found (280 ms for a count at 100,000 fix PRs, not 10).
    return Matches(key, [found, select(Fix.id).where(Fix.id == key, *others).exists()], ordered)


def count_matches(session: Session, found: Matches, cap: int) -> int:
    """How many fix PRs ``found`` selects, counting no further than ``cap`` + 1 (the database
    stops reading matches there)."""
    matching = select(found.key).where(*found.conditions).limit(cap + 1)
    return session.scalar(select(func.count()).select_from(matching.subquery())) or 0


def search_page(session: Session, filters: FixFilters, found: Matches) -> Keyset:
    """The page of ``found`` that ``filters``' cursor points at, newest first, as ids."""
    page = partial(
        keyset_page,
        session,
        select(label("id", found.key)).where(*found.conditions),
        found.key,
        found.conditions,
        before=filters.before,
        after=filters.after,
    )
    if found.ordered:
        return page()
    unordered = Unordered(sort=found.key + 0, near=SEARCH_WINDOW)
    if not filters.after:
        top = filters.before or (session.scalar(select(func.max(Fix.id))) or 0) + 1
        recent = page(unordered=unordered, floor=top - SEARCH_WINDOW)
        if recent.older is not None:  # a whole page, and more beyond it
            return recent
    return page(unordered=unordered)


def _has_fts_table(session: Session) -> bool:
    return _fts_table_in(session.get_bind().engine)


@cache
def _fts_table_in(engine: Engine) -> bool:
    # Asked once per database: the migrations made the table (or could not) before serving.
    with engine.connect() as connection:
        found = connection.exec_driver_sql(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (SEARCH_TABLE,)
        ).first()
    return found is not None
