"""Recording a GitHub (or GitLab) webhook delivery: dedupe by its id, store it, queue its
processing.

The API route checks the signature and headers and reads the payload's ``action``;
:func:`record_delivery` does the rest in the caller's transaction. ``process_delivery`` is sent
once that transaction commits; a delivery whose message is lost stays ``stored``, and the
reconciler (``bot.pipeline.reconcile.task``) sends it again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.db.crud import NewDelivery, insert_deliveries
from bot.db.models import Delivery
from bot.queue.starts import start_process_delivery

# The events a handler is registered for (bot.intake.route); others are stored as ``ignored``.
COALESCED_ACTIONS = frozenset({"synchronize", "opened", "reopened"})
HANDLED_EVENTS = frozenset(
    {"issue_comment", "pull_request", "check_run", "status", "workflow_job", "push"}
    | {"Pipeline Hook", "Job Hook"}  # GitLab's (bot.intake.gitlab)
    | {"build.finished", "job.finished"}  # Buildkite's (bot.intake.buildkite)
)


@dataclass(frozen=True)
class GitHubDelivery:
    """One webhook delivery as GitHub (or GitLab: ``source``) sent it: its id, event, the
    payload's action (GitLab: its ``object_kind``) and body."""

    delivery_id: str
    event: str
    action: str | None
    body: bytes
    coalesce_key: str | None = None  # see ``coalesce_key``
    source: str = "github"  # or "gitlab", "buildkite": who sent it (deliveries.source)

    @property
    def key(self) -> str:
        """Its deliveries.key: the sender's delivery id, which a redelivery repeats."""
        return f"{self.source}:{self.delivery_id}"


class DeliveryOutcome(StrEnum):
    """How :func:`record_delivery` ended."""

    DUPLICATE = "duplicate"  # this delivery id was stored before: nothing done
    COALESCED = "coalesced"  # stored; a delivery of the same work waits: no task of its own
    PONG = "pong"  # GitHub's ``ping``: stored as processed
    IGNORED = "ignored"  # an event no handler takes: stored as ignored
    ACCEPTED = "accepted"  # stored; ``process_delivery`` is queued after the commit


@dataclass(frozen=True)
class RecordedDelivery:
    """The outcome, and the stored row's id (None for a duplicate)."""

    outcome: DeliveryOutcome
    delivery_id: int | None


def record_delivery(session: Session, delivery: GitHubDelivery) -> RecordedDelivery:
    """Store ``delivery`` unless its id is known; queue its processing when an event we handle."""
    return record_deliveries(session, [delivery])[0]


def record_deliveries(
    session: Session, deliveries: Sequence[GitHubDelivery]
) -> list[RecordedDelivery]:
    """:func:`record_delivery` for many at once, in one INSERT; one outcome each, in order.

    A delivery id repeated within ``deliveries`` is stored once: the later ones are duplicates.
    """
    outcomes = _coalesced(session, deliveries, [_outcome(d.event) for d in deliveries])
    stored = insert_deliveries(
        session,
        [
            NewDelivery(
                d.source,
                d.key,
                d.event,
                d.action,
                d.body,
                outcome=_STORED_AS[outcome],
                coalesce_key=d.coalesce_key,
            )
            for d, outcome in zip(deliveries, outcomes, strict=True)
        ],
    )
    recorded: list[RecordedDelivery] = []
    for delivery, outcome in zip(deliveries, outcomes, strict=True):
        delivery_id = stored.pop(delivery.key, None)  # popped: a repeat of it is a duplicate
        if delivery_id is None:
            recorded.append(RecordedDelivery(DeliveryOutcome.DUPLICATE, None))
            continue
        if outcome is DeliveryOutcome.ACCEPTED:
            start_process_delivery(session, delivery_id)
        recorded.append(RecordedDelivery(outcome, delivery_id))
    return recorded


def coalesce_key(event: str, payload: dict[str, object]) -> str | None:
    """What a delivery would do, when a flood of them can do the same: a ``pull_request``
    ``synchronize``, ``opened`` or ``reopened`` of one PR at one head (GitHub sends one per push;
    a force-push war, or anyone replaying them, sends thousands)."""
    pull = payload.get("pull_request")
    action, repository = payload.get("action"), payload.get("repository")
    if event != "pull_request" or action not in COALESCED_ACTIONS or not isinstance(pull, dict):
        return None
    head = pull.get("head")
    sha = head.get("sha") if isinstance(head, dict) else None
    name = repository.get("full_name") if isinstance(repository, dict) else None
    number = pull.get("number")
    if not (isinstance(sha, str) and isinstance(name, str) and isinstance(number, int)):
        return None
    return f"pull_request:{name}#{number}:{action}:{sha}"[:200]


def _coalesced(
    session: Session, deliveries: Sequence[GitHubDelivery], outcomes: list[DeliveryOutcome]
) -> list[DeliveryOutcome]:
    """``outcomes``, with an accepted delivery made ``coalesced`` when a delivery of the same
    work is stored and not processed yet (earlier, or earlier in this batch)."""
    keys = {d.coalesce_key for d in deliveries if d.coalesce_key}
    if not keys:
        return outcomes
    waiting = set(
        session.scalars(
            select(Delivery.coalesce_key).where(
                Delivery.coalesce_key.in_(keys), Delivery.outcome == "stored"
            )
        )
    )
    result = []
    for delivery, outcome in zip(deliveries, outcomes, strict=True):
        key = delivery.coalesce_key
        if key and outcome is DeliveryOutcome.ACCEPTED:
            if key in waiting:
                outcome = DeliveryOutcome.COALESCED
            waiting.add(key)
        result.append(outcome)
    return result


# deliveries.outcome as stored: only an accepted delivery waits for its processing.
_STORED_AS = {
    DeliveryOutcome.COALESCED: "coalesced",
    DeliveryOutcome.PONG: "processed",
    DeliveryOutcome.IGNORED: "ignored",
    DeliveryOutcome.ACCEPTED: "stored",
}


def _outcome(event: str) -> DeliveryOutcome:
    if event == "ping":
        return DeliveryOutcome.PONG
    return DeliveryOutcome.ACCEPTED if event in HANDLED_EVENTS else DeliveryOutcome.IGNORED
