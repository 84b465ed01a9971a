"""The reconciler's lost-delivery lookup in two steps: the scan of every delivery in a reading
session (no write lock on SQLite), then, in the writing one, only those still undispatched."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import update

from bot.db.crud import (
    NewDelivery,
    insert_deliveries,
    undispatched_deliveries,
    undispatched_delivery_ids,
)
from bot.db.models import Delivery, utcnow
from bot.db.session import read_scope, session_scope

STALE = timedelta(seconds=120)


def _store(url: str) -> dict[str, int]:
    with session_scope(url) as session:
        ids = insert_deliveries(
            session,
            [
                NewDelivery("github", "github:lost", "issues", "opened", b"{}"),
                NewDelivery("github", "github:fresh", "issues", "opened", b"{}"),
                NewDelivery("github", "github:done", "issues", "opened", b"{}", "processed"),
                NewDelivery("ci", "ci:report", "ci_failure", None, b"log"),  # triage's to resend
            ],
        )
        long_ago = utcnow() - timedelta(hours=1)
        stale = [ids["github:lost"], ids["github:done"], ids["ci:report"]]
        session.execute(
            update(Delivery).where(Delivery.id.in_(stale)).values(dispatched_at=long_ago)
        )
    return ids


def test_the_scan_finds_the_lost_github_deliveries_only(settings) -> None:
    url = settings.resolved_database_url
    ids = _store(url)
    with read_scope(url) as reading:
        assert undispatched_delivery_ids(reading, older_than=STALE) == [ids["github:lost"]]


def test_one_processed_between_the_scan_and_the_write_is_not_resent(settings) -> None:
    url = settings.resolved_database_url
    ids = _store(url)
    with read_scope(url) as reading:
        candidates = undispatched_delivery_ids(reading, older_than=STALE)
    with session_scope(url) as session:  # meanwhile its task ran after all
        session.execute(
            update(Delivery).where(Delivery.id == ids["github:lost"]).values(outcome="processed")
        )
    with session_scope(url) as session:
        assert undispatched_deliveries(session, older_than=STALE, among=candidates) == []
        assert undispatched_deliveries(session, older_than=STALE, among=[]) == []


def test_one_still_lost_is_loaded_for_resending(settings) -> None:
    url = settings.resolved_database_url
    ids = _store(url)
    with read_scope(url) as reading:
        candidates = undispatched_delivery_ids(reading, older_than=STALE)
    with session_scope(url) as session:
        found = undispatched_deliveries(session, older_than=STALE, among=candidates)
        assert [d.key for d in found] == ["github:lost"] and found[0].id == ids["github:lost"]


def test_more_ids_than_one_statement_may_bind_are_asked_for_in_chunks(settings) -> None:
    """After a long outage the scan can find more than PostgreSQL's 65,535 parameters."""
    url = settings.resolved_database_url
    ids = _store(url)
    among = [ids["github:lost"], *range(10_000_000, 10_070_000)]  # the rest: gone since
    with session_scope(url) as session:
        found = undispatched_deliveries(session, older_than=STALE, among=among)
        assert [d.key for d in found] == ["github:lost"]


def test_a_lost_buildkite_delivery_is_found_like_a_github_one(settings) -> None:
    url = settings.resolved_database_url
    ids = _store(url)
    with session_scope(url) as session:
        [lost] = insert_deliveries(
            session,
            [NewDelivery("buildkite", "buildkite:job.finished:1", "job.finished", None, b"{}")],
        ).values()
        long_ago = utcnow() - timedelta(hours=1)
        session.execute(update(Delivery).where(Delivery.id == lost).values(dispatched_at=long_ago))
    with read_scope(url) as reading:
        found = undispatched_delivery_ids(reading, older_than=STALE)
    assert sorted(found) == sorted([ids["github:lost"], lost])
