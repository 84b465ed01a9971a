"""``bot.db.records.suppressions`` on SQLite and PostgreSQL: one active suppression per repository and
dedupe key (a second decision keeps the first; after a lift a new one can be recorded), lifting by
fix, and finding our merged fix for a key (a revert's tell)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from bot.db.models import Fix, Suppression, SuppressionReason
from bot.db.records.suppressions import (
    active_suppression,
    lift_suppressions,
    merged_fix_with_key,
    suppress,
    suppressions_of,
)
from bot.db.session import session_scope
from tests.bot.dashboard import seed

CLOSED = SuppressionReason.CLOSED_UNMERGED


def _suppress(session, fix, who: str) -> Suppression:
    return suppress(
        session,
        repository=fix.repository,
        dedupe_key=fix.dedupe_key,
        reason=CLOSED,
        decided_by=who,
        fix_id=fix.id,
        violation_keys=list(fix.violation_keys),
    )


def test_one_active_decision_per_key_and_a_new_one_after_a_lift(settings) -> None:
    url = settings.resolved_database_url
    with session_scope(url) as session:
        fix = seed.fix(session, n=1, state="closed")
        first = _suppress(session, fix, "carol")
        again = _suppress(session, fix, "dave")  # the first decision stands
        assert again.id == first.id and again.decided_by == "carol"
    with session_scope(url) as session:
        fix = session.scalars(select(Fix)).one()
        lifted = lift_suppressions(session, fix=fix, lifted_by="erin")
        assert [row.lifted_by for row in lifted] == ["erin"]
        assert (
            active_suppression(session, repository=fix.repository, dedupe_key=fix.dedupe_key)
            is None
        )
        later = _suppress(session, fix, "frank")
        assert later.id != first.id
        assert [row.decided_by for row in suppressions_of(session, fix)] == ["frank", "carol"]


def test_the_database_refuses_two_active_rows_for_one_key(settings) -> None:
    with session_scope(settings.resolved_database_url) as session:
        fix = seed.fix(session, n=1, state="closed")
        for who in ("carol", "dave"):
            session.add(
                Suppression(
                    repository=fix.repository,
                    dedupe_key=fix.dedupe_key,
                    reason=CLOSED.value,
                    decided_by=who,
                )
            )
        with pytest.raises(IntegrityError):
            session.flush()
        session.rollback()
    with session_scope(settings.resolved_database_url) as session:
        assert session.scalar(select(func.count()).select_from(Suppression)) == 0


def test_our_merged_fix_is_found_by_its_key(settings) -> None:
    with session_scope(settings.resolved_database_url) as session:
        open_fix = seed.fix(session, n=1, state="open")
        merged = seed.fix(session, n=2, state="merged")
        assert (
            merged_fix_with_key(session, repository=merged.repository, dedupe_key=merged.dedupe_key)
            is merged
        )
        assert (
            merged_fix_with_key(
                session, repository=open_fix.repository, dedupe_key=open_fix.dedupe_key
            )
            is None
        )
