"""``bot.intake.deliveries``: a GitHub delivery stored once by its id; processing queued after
the commit for the events a handler takes (SQLite and PostgreSQL, the real filesystem broker)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from bot.db.models import Delivery
from bot.db.session import session_scope
from bot.intake.deliveries import (
    HANDLED_EVENTS,
    DeliveryOutcome,
    GitHubDelivery,
    record_delivery,
)
from bot.intake.route import HANDLERS
from bot.queue import names as task_names
from tests.bot.intake.broker import sent_tasks


@pytest.fixture
def queued(settings, task_settings):
    """The parametrised settings; what is sent goes to their broker folder."""
    return task_settings(settings)


def _record(settings, delivery: GitHubDelivery) -> tuple[DeliveryOutcome, int | None]:
    with session_scope(settings.resolved_database_url) as session:
        recorded = record_delivery(session, delivery)
        return recorded.outcome, recorded.delivery_id


def _rows(settings) -> list[tuple[str, str, str | None, str]]:
    with session_scope(settings.resolved_database_url) as session:
        return [
            (d.key, d.event, d.action, d.outcome)
            for d in session.scalars(select(Delivery).order_by(Delivery.id))
        ]


def test_a_handled_event_is_stored_and_processing_is_sent_after_the_commit(queued):
    delivery = GitHubDelivery("d-1", "issue_comment", "created", b'{"action": "created"}')
    with session_scope(queued.resolved_database_url) as session:
        recorded = record_delivery(session, delivery)
        assert recorded.outcome is DeliveryOutcome.ACCEPTED and recorded.delivery_id is not None
        delivery_id = recorded.delivery_id
        assert sent_tasks(queued) == []  # not before the commit
    assert sent_tasks(queued) == [(task_names.PROCESS_DELIVERY, [delivery_id])]
    assert _rows(queued) == [("github:d-1", "issue_comment", "created", "stored")]


def test_a_redelivery_is_a_duplicate_and_sends_nothing_more(queued):
    delivery = GitHubDelivery("d-2", "workflow_job", "completed", b"{}")
    outcome, first = _record(queued, delivery)
    assert outcome is DeliveryOutcome.ACCEPTED
    assert _record(queued, delivery) == (DeliveryOutcome.DUPLICATE, None)
    assert len(_rows(queued)) == 1
    assert sent_tasks(queued) == [(task_names.PROCESS_DELIVERY, [first])]


@pytest.mark.parametrize(
    ("event", "outcome", "stored_as"),
    [("ping", DeliveryOutcome.PONG, "processed"), ("star", DeliveryOutcome.IGNORED, "ignored")],
)
def test_pings_and_unhandled_events_are_stored_as_done(queued, event, outcome, stored_as):
    recorded, delivery_id = _record(queued, GitHubDelivery("d-3", event, None, b"{}"))
    assert recorded is outcome and delivery_id is not None
    assert _rows(queued) == [("github:d-3", event, None, stored_as)]
    assert sent_tasks(queued) == []  # the reconciler never re-sends them either: not "stored"


def test_nothing_is_sent_when_the_transaction_rolls_back(queued):
    with (
        pytest.raises(RuntimeError, match="later step failed"),
        session_scope(queued.resolved_database_url) as session,
    ):
        record_delivery(session, GitHubDelivery("d-4", "status", None, b"{}"))
        raise RuntimeError("a later step failed")
    assert _rows(queued) == [] and sent_tasks(queued) == []


def test_every_event_a_handler_is_registered_for_is_handled():
    assert {handler.event for handler in HANDLERS} == HANDLED_EVENTS


def test_a_flood_of_one_prs_head_is_stored_whole_and_sent_once(settings, task_settings):
    """Deliveries of the same work (a PR's synchronize at one head) while one waits: each is
    stored (nothing lost), only the first is sent to a worker; once it was processed, the next
    is sent again."""
    from sqlalchemy import select, update

    from bot.db.models import Delivery
    from bot.db.session import session_scope
    from bot.intake.deliveries import (
        DeliveryOutcome,
        GitHubDelivery,
        coalesce_key,
        record_deliveries,
    )
    from tests.bot.intake.broker import sent_tasks

    task_settings(settings)
    payload = {
        "action": "synchronize",
        "repository": {"full_name": "acme/x"},
        "pull_request": {"number": 7, "head": {"sha": "a" * 40}},
    }
    key = coalesce_key("pull_request", payload)
    assert key == f"pull_request:acme/x#7:synchronize:{'a' * 40}"
    assert coalesce_key("pull_request", {**payload, "action": "labeled"}) is None
    assert coalesce_key("issues", payload) is None

    def flood(ids: range) -> list[DeliveryOutcome]:
        with session_scope(settings.resolved_database_url) as session:
            batch = [
                GitHubDelivery(f"d{i}", "pull_request", "synchronize", b"{}", key) for i in ids
            ]
            return [r.outcome for r in record_deliveries(session, batch)]

    assert flood(range(3)) == [DeliveryOutcome.ACCEPTED] + [DeliveryOutcome.COALESCED] * 2
    assert flood(range(3, 5)) == [DeliveryOutcome.COALESCED] * 2
    assert len(sent_tasks(settings)) == 1
    with session_scope(settings.resolved_database_url) as session:
        assert len(session.scalars(select(Delivery)).all()) == 5
        session.execute(
            update(Delivery).where(Delivery.outcome == "stored").values(outcome="processed")
        )
    assert flood(range(5, 6)) == [DeliveryOutcome.ACCEPTED]
