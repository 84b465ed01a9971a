"""Deliveries waiting on an API: noted per attempt, cleared with the outcome, listed oldest first
with the total, on real SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import update

from bot.db.models import Delivery
from bot.db.records.delivery_waits import SHOWN, clear_wait, note_wait, waiting
from bot.db.session import session_scope


def _delivery(session, n: int) -> int:
    row = Delivery(source="gitlab", key=f"k-{n}", event="Pipeline Hook", action=None, body=b"{}")
    session.add(row)
    session.flush()
    return row.id


def test_each_attempt_is_counted_with_its_latest_reason_until_the_outcome_clears_it(settings):
    url = settings.resolved_database_url
    with session_scope(url) as session:
        first, second = _delivery(session, 1), _delivery(session, 2)
        note_wait(session, first, "gitlab-pipeline: 503 " + "x" * 500)
    with session_scope(url) as session:
        note_wait(session, first, "gitlab-pipeline: 429, wait 300 s")
        note_wait(session, second, "gitlab-job: connection refused")
    with session_scope(url) as session:
        shown, total = waiting(session)
        assert total == 2 and [w.delivery_id for w in shown] == [first, second]
        assert (shown[0].attempts, shown[0].reason) == (2, "gitlab-pipeline: 429, wait 300 s")
        clear_wait(session, first)
        # A delivery recorded by another path (not through its wait) is not shown as waiting.
        session.execute(update(Delivery).where(Delivery.id == second).values(outcome="processed"))
    with session_scope(url) as session:
        assert waiting(session) == ([], 0)


def test_the_page_lists_the_oldest_and_counts_them_all(settings):
    url = settings.resolved_database_url
    with session_scope(url) as session:
        ids = [_delivery(session, n) for n in range(SHOWN + 3)]
        for delivery_id in ids:
            note_wait(session, delivery_id, "buildkite-job: 502")
    with session_scope(url) as session:
        shown, total = waiting(session)
    assert total == SHOWN + 3 and [w.delivery_id for w in shown] == ids[:SHOWN]
    assert len(next(iter(shown)).reason) <= 300
