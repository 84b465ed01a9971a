"""The dashboard's running totals against a full recount, on SQLite and PostgreSQL: the triggers
mark every change whatever code makes it (ORM, Core, raw SQL), a page's in-memory count and the
reconciler's durable fold agree with counting every row again, in any batch size, and a
database migrated with rows in it is counted from them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from alembic import command
from sqlalchemy import create_engine, delete, func, select, text, update

from bot.db.migrate import alembic_config
from bot.db.models import CiFailure, Fix, RepairRun, Suppression, Verification
from bot.db.records.tallies import FIX, REPORT, Tally, TallyDirty
from bot.db.session import engine_for, session_scope
from bot.db.tally_fold import current_parts, data_version, fold, fold_backlog, read_totals
from bot.db.tally_parts import Parts, summed
from tests.bot.dashboard import seed

EVERY_NAME = (
    "fix_state",
    "fix_repository",
    "fix_signature",
    "fix_day",
    "verdict",
    "device",
    "funnel",
    "quality:all",
    "quality:signature",
    "quality:codemod",
)


def _recount(url: str) -> Parts:
    """Every figure counted again from every row: what the totals must equal."""
    with session_scope(url) as session:
        owners = {(FIX, i) for i in session.scalars(select(Fix.id))}
        owners |= {(REPORT, i) for i in session.scalars(select(CiFailure.id))}
        total = summed(current_parts(session, owners).values())
    return {figure: value for figure, value in total.items() if value != (0, 0.0)}


def _read(url: str) -> Parts:
    with session_scope(url) as session:
        totals = read_totals(session, EVERY_NAME)
    assert totals.behind == 0
    return totals.figures


def _folded(url: str) -> Parts:
    with session_scope(url) as session:
        rows = session.scalars(select(Tally).where(Tally.name != "changes")).all()  # the version
        return {
            (t.name, t.key, t.measure): (t.count, t.seconds) for t in rows if t.count or t.seconds
        }


def _dirty(url: str) -> int:
    with session_scope(url) as session:
        return session.scalar(select(func.count()).select_from(TallyDirty)) or 0


def _same(got: Parts, want: Parts) -> None:
    assert got.keys() == want.keys()
    for figure, (count, seconds) in want.items():
        assert got[figure][0] == count, figure
        assert got[figure][1] == pytest.approx(seconds, abs=1e-6), figure


def _change_everything(url: str) -> None:
    """Changes the pipeline, the runner and an operator make, through each way of writing."""
    with session_scope(url) as session:
        fixes = {f.number: f for f in session.scalars(select(Fix))}
        fixes[5].state = "merged"  # ORM
        fixes[5].merged_with_edits = False
        session.execute(update(Fix).where(Fix.number == 9).values(state="closed"))  # Core
        session.execute(delete(Suppression))  # the revert undone: fix 2 lands unchanged again
        seed.verification(session, fixes[4], device="cpu")  # verified fixed after all
    with session_scope(url) as session:
        session.execute(text("UPDATE verifications SET device = 'H200' WHERE device = 'cpu'"))
        run = session.scalars(select(RepairRun).order_by(RepairRun.id)).first()
        assert run is not None
        run.state = "unclassified"


def test_the_triggers_are_there_at_head(settings):
    url = settings.resolved_database_url
    with engine_for(url).connect() as connection:
        if connection.dialect.name == "postgresql":
            query = "SELECT tgname FROM pg_trigger WHERE tgname LIKE 'tally_%%'"
        else:
            query = "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'tally_%'"
        names = set(connection.exec_driver_sql(query).scalars())
    tables = ("fixes", "verifications", "repair_runs", "reports", "suppressions")
    if settings.resolved_database_url.startswith("postgresql"):
        assert names == {f"tally_{t}" for t in tables}
    else:
        assert names == {f"tally_{t}_{e}" for t in tables for e in ("insert", "update", "delete")}


def test_read_and_fold_equal_a_recount_through_every_kind_of_change(settings):
    url = settings.resolved_database_url
    with session_scope(url) as session:
        seed.outcomes(session)
    want = _recount(url)
    _same(_read(url), want)  # nothing folded yet: the page counts the changes itself
    with session_scope(url) as session:
        assert fold(session) > 0
    assert _dirty(url) == 0
    _same(_folded(url), want)
    _same(_read(url), want)
    _change_everything(url)
    assert _dirty(url) > 0
    changed = _recount(url)
    assert changed != want
    _same(_read(url), changed)  # folded totals plus the unfolded differences
    assert fold_backlog(url) > 0
    _same(_folded(url), changed)


def test_small_batches_fold_to_the_same_totals(settings):
    url = settings.resolved_database_url
    with session_scope(url) as session:
        seed.outcomes(session)
    _change_everything(url)
    rounds = 0
    while _dirty(url):
        with session_scope(url) as session:
            fold(session, batch=3)
        rounds += 1
    assert rounds > 3
    _same(_folded(url), _recount(url))


def test_the_data_version_moves_with_every_change_and_not_with_a_fold(settings):
    url = settings.resolved_database_url
    with session_scope(url) as session:
        seed.outcomes(session)
        seeded = data_version(session)
    assert seeded > 0
    fold_backlog(url)
    with session_scope(url) as session:
        assert data_version(session) == seeded
        session.execute(update(Fix).where(Fix.number == 1).values(title="retitled"))
    with session_scope(url) as session:
        once = data_version(session)
        assert once > seeded
        session.execute(update(Fix).where(Fix.number == 1).values(title="retitled again"))
    with session_scope(url) as session:
        moved = data_version(session)
    assert moved > once  # the same fix changed twice while still unfolded: both count
    fold_backlog(url)
    with session_scope(url) as session:
        assert data_version(session) == moved


def test_a_write_the_totals_do_not_show_marks_nothing(settings):
    url = settings.resolved_database_url
    with session_scope(url) as session:
        seed.outcomes(session)
    fold_backlog(url)
    with session_scope(url) as session:
        for verification in session.scalars(select(Verification)):
            verification.heartbeat_at = seed.T0 + timedelta(hours=1)  # a runner's heartbeat
        for fix in session.scalars(select(Fix)):
            fix.head_sha = "f" * 40
    assert _dirty(url) == 0


def test_a_page_counts_at_most_its_limit_and_says_how_far_behind(settings):
    url = settings.resolved_database_url
    with session_scope(url) as session:
        seed.outcomes(session)
        marked = session.scalar(select(func.count()).select_from(TallyDirty)) or 0
        totals = read_totals(session, ("fix_state",), limit=2)
    assert totals.behind == marked - 2
    assert sum(count for count, _ in totals.figures.values()) < 10


def test_a_database_migrated_with_rows_in_it_is_counted_from_them(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    config = alembic_config(url)
    with engine_for(url).begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0013")
    with session_scope(url) as session:
        seed.outcomes(session)
    with engine_for(url).begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
    want = _recount(url)
    _same(_read(url), want)
    fold_backlog(url)
    _same(_folded(url), want)


# PostgreSQL only: SQLite has one writer at a time, so two folds cannot overlap there.
@pytest.mark.parametrize("settings", ["postgresql"], indirect=True)
def test_only_one_fold_counts_at_a_time_on_postgresql(settings):
    url = settings.resolved_database_url
    with session_scope(url) as session:
        seed.outcomes(session)
    engine = create_engine(url)
    with engine.begin() as holder:
        holder.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": 0x7A11E5})
        with session_scope(url) as session:
            assert fold(session) == 0  # the other fold holds the lock: nothing counted twice
    engine.dispose()
    assert fold_backlog(url) > 0
    _same(_folded(url), _recount(url))
