"""Free-text search of the fix PR list on real SQLite and PostgreSQL: through the search table
each keeps (an FTS5 table, a lowered text table with a trigram index), with the other filters,
paged by id either way, and the table kept current by the database whatever wrote the row."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, text, update

from bot.dashboard import search as dashboard_search
from bot.dashboard.filters import FixFilters
from bot.dashboard.queries import FixPage, list_fixes
from bot.db.models import Fix, RepairRun
from bot.db.session import engine_for, session_scope
from tests.bot.dashboard import seed


def _listed(url: str, **filters: str | int) -> FixPage:
    with session_scope(url) as session:
        return list_fixes(session, filters=FixFilters(**filters), figures={})  # type: ignore[arg-type]


def _ids(page: FixPage) -> list[int]:
    return [row.id for row in page.rows]


def test_a_search_with_another_filter_pages_and_counts_the_rows_meeting_both(settings):
    url = settings.resolved_database_url
    with session_scope(url) as session:
        for n in range(1, 131):
            title = f"{'Alpha' if n % 2 else 'Beta'} worker {n}"
            seed.fix(session, n=n, title=title, state="merged" if n % 3 == 0 else "open")
    wanted = [n for n in range(130, 0, -1) if n % 2 and n % 3 == 0]  # Alpha and merged
    first = _listed(url, q="alpha", state="merged")
    assert _ids(first) == wanted and (first.total, first.exact) == (len(wanted), True)
    assert first.older is None and first.newer is None
    alpha = [n for n in range(130, 0, -1) if n % 2]
    page = _listed(url, q="ALPHA")
    assert _ids(page) == alpha[:50] and page.older == alpha[49] and page.newer is None
    older = _listed(url, q="ALPHA", before=alpha[49])
    assert _ids(older) == alpha[50:] and older.older is None and older.newer == alpha[50]
    assert _ids(_listed(url, q="ALPHA", after=alpha[50])) == alpha[:50]


def test_a_window_holding_exactly_one_page_still_links_the_older_matches(settings, monkeypatch):
    # PostgreSQL looks among the newest ids first; a page that exactly fills that window must
    # not hide the matches below it. SQLite reads its index in order and gives the same pages.
    monkeypatch.setattr(dashboard_search, "SEARCH_WINDOW", 50)
    url = settings.resolved_database_url
    with session_scope(url) as session:
        for n in range(1, 71):
            seed.fix(session, n=n, title=f"common fix {n}")
    page = _listed(url, q="common")
    assert _ids(page) == list(range(70, 20, -1)) and page.older == 21
    assert _ids(_listed(url, q="common", before=21)) == list(range(20, 0, -1))


def test_the_search_table_follows_every_insert_update_and_delete(settings):
    url = settings.resolved_database_url
    with session_scope(url) as session:
        kept = seed.fix(session, n=1, title="Rename ÉclairWorker.forward").id
        dropped = seed.fix(session, n=2, title="Rename GammaWorker.forward").id
    assert _ids(_listed(url, q="éclairworker")) == [kept]  # any case, beyond ASCII too
    with session_scope(url) as session:  # a plain SQL write, as a human or a script would make
        session.execute(update(Fix).where(Fix.id == kept).values(title="Rename DeltaWorker"))
    assert _ids(_listed(url, q="éclairworker")) == []
    assert _ids(_listed(url, q="deltaworker")) == [kept]
    with session_scope(url) as session:
        session.execute(update(RepairRun).where(RepairRun.fix_id == dropped).values(fix_id=None))
        session.execute(delete(Fix).where(Fix.id == dropped))
    assert _ids(_listed(url, q="gammaworker")) == []
    assert _ids(_listed(url, q="worker")) == [kept]


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
def test_sqlite_without_its_trigram_table_scans_the_columns_instead(settings):
    # An SQLite older than 3.34 has no trigram tokenizer: migration 0014 then makes no table.
    url = settings.resolved_database_url
    with session_scope(url) as session:
        for n in range(1, 4):
            seed.fix(session, n=n, title=f"{'Alpha' if n != 2 else 'Beta'} fix {n}")
    with engine_for(url).begin() as connection:
        for event in ("insert", "update", "delete"):
            connection.execute(text(f"DROP TRIGGER fixes_search_{event}"))
        connection.execute(text("DROP TABLE fixes_search"))
    dashboard_search._fts_table_in.cache_clear()
    try:
        page = _listed(url, q="ALPHA")
        assert _ids(page) == [3, 1] and (page.total, page.exact) == (2, True)
        assert _ids(_listed(url, q="al")) == [3, 1]  # shorter than a trigram: scanned anyway
    finally:
        dashboard_search._fts_table_in.cache_clear()
