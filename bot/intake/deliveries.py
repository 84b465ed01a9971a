"""Recording a GitHub webhook delivery: dedupe by its id, store it, queue its processing.

The API route checks the signature and headers and reads the payload's ``action``;
:func:`record_delivery` does the rest in the caller's transaction. ``process_delivery`` is sent
once that transaction commits; a delivery whose message is lost stays ``stored``, and the
reconciler (``bot.pipeline.reconcile``) sends it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy.orm import Session

from bot.db.crud import insert_delivery
from bot.db.models import Delivery
from bot.queue import names as task_names
from bot.queue.enqueue import enqueue_after_commit

# The events a handler is registered for (bot.intake.route); others are stored as ``ignored``.
HANDLED_EVENTS = frozenset({"issue_comment", "pull_request", "check_run", "status", "workflow_job"})


@dataclass(frozen=True)
class GitHubDelivery:
    """One webhook delivery as GitHub sent it: its id, event, the payload's action and body."""

    delivery_id: str
    event: str
    action: str | None
    body: bytes

    @property
    def key(self) -> str:
        """Its deliveries.key: GitHub's delivery id, which a redelivery repeats."""
        return f"github:{self.delivery_id}"


class DeliveryOutcome(StrEnum):
    """How :func:`record_delivery` ended."""

    DUPLICATE = "duplicate"  # this delivery id was stored before: nothing done
    PONG = "pong"  # GitHub's ``ping``: stored as processed
    IGNORED = "ignored"  # an event no handler takes: stored as ignored
    ACCEPTED = "accepted"  # stored; ``process_delivery`` is queued after the commit


@dataclass(frozen=True)
class RecordedDelivery:
    """The outcome, and the stored row (None for a duplicate)."""

    outcome: DeliveryOutcome
    delivery: Delivery | None


def record_delivery(session: Session, delivery: GitHubDelivery) -> RecordedDelivery:
    """Store ``delivery`` unless its id is known; queue its processing when an event we handle."""
    stored = insert_delivery(
        session,
        source="github",
        key=delivery.key,
        event=delivery.event,
        action=delivery.action,
        body=delivery.body,
    )
    if stored is None:
        return RecordedDelivery(DeliveryOutcome.DUPLICATE, None)
    if delivery.event == "ping":
        stored.outcome = "processed"
        return RecordedDelivery(DeliveryOutcome.PONG, stored)
    if delivery.event not in HANDLED_EVENTS:
        stored.outcome = "ignored"
        return RecordedDelivery(DeliveryOutcome.IGNORED, stored)
    session.flush()
    enqueue_after_commit(session, task_names.PROCESS_DELIVERY, stored.id)
    return RecordedDelivery(DeliveryOutcome.ACCEPTED, stored)
