"""Data functions: keyword-only, one session in, no commits (the caller owns the transaction)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, func, or_, select, tuple_
from sqlalchemy.orm import Session

from bot.db.body_codec import encode_body
from bot.db.bulk_insert import insert_new_returning
from bot.db.models import (
    TERMINAL_STATES,
    VERIFICATION_STATES,
    CiFailure,
    CommandInvocation,
    Delivery,
    Fix,
    FixState,
    RepairRun,
    RunState,
    Transition,
    utcnow,
)


@dataclass(frozen=True)
class NewDelivery:
    """A delivery to store; ``key`` is unique across all deliveries."""

    source: str
    key: str
    event: str
    action: str | None
    body: bytes
    outcome: str = "stored"
    coalesce_key: str | None = None  # what it would do, when another delivery may do the same


def insert_deliveries(session: Session, deliveries: Sequence[NewDelivery]) -> dict[str, int]:
    """Store the deliveries whose key is new; the ids of those stored, by key.

    One ``INSERT ... VALUES (...), (...) ON CONFLICT (key) DO NOTHING RETURNING id, key``: the
    unique index decides between concurrent requests with the same key, and a duplicate costs
    no exception and no savepoint. Of two with the same key in ``deliveries``, the first wins.
    Large bodies are stored compressed (``bot.db.body_codec``; read them with ``content()``),
    here in the writer rather than by each request: measured under wrk with 1 MB reports, a
    request's round trip through the thread pool to compress cost it ~18 ms of waiting (the GIL,
    then the event loop's attention) while the writer compresses a batch with one hand-over.
    """
    if not deliveries:
        return {}
    first_of_each: dict[str, NewDelivery] = {}
    for delivery in deliveries:
        first_of_each.setdefault(delivery.key, delivery)
    now = utcnow()
    rows = [
        {
            "source": d.source,
            "key": d.key,
            "event": d.event,
            "action": d.action,
            "body": stored,
            "body_codec": codec,
            "outcome": d.outcome,
            "coalesce_key": d.coalesce_key,
            "received_at": now,
            "dispatched_at": now,
        }
        for d in first_of_each.values()
        for stored, codec in [encode_body(d.body)]
    ]
    returned = insert_new_returning(
        session, cast(Table, Delivery.__table__), rows, conflict="key", returning=("key", "id")
    )
    return {key: delivery_id for key, delivery_id in returned}


def insert_delivery(
    session: Session,
    *,
    source: str,
    key: str,
    event: str,
    action: str | None,
    body: bytes,
    outcome: str = "stored",
) -> int | None:
    """Store one delivery and return its id; None when its key was seen before (a redelivery)."""
    new = NewDelivery(source, key, event, action, body, outcome)
    stored = insert_deliveries(session, [new])
    return stored.get(key)


@dataclass(frozen=True)
class KnownReports:
    """Reports already stored, by idempotency key and by (pipeline, build number)."""

    by_key: dict[str, CiFailure]
    by_build: dict[tuple[str, int], CiFailure]


def find_reports(
    session: Session, *, keys: Sequence[str], builds: Sequence[tuple[str, int]]
) -> KnownReports:
    """The stored reports with any of these idempotency keys or (pipeline, build) pairs, in
    one query (both are unique indexes)."""
    conditions = []
    if keys:
        conditions.append(CiFailure.idempotency_key.in_(sorted(set(keys))))
    if builds:
        pairs = sorted(set(builds))
        conditions.append(tuple_(CiFailure.pipeline, CiFailure.build_number).in_(pairs))
    found = session.scalars(select(CiFailure).where(or_(*conditions))).all() if conditions else []
    return KnownReports(
        by_key={r.idempotency_key: r for r in found if r.idempotency_key},
        by_build={
            (r.pipeline, r.build_number): r
            for r in found
            if r.pipeline and r.build_number is not None
        },
    )


def find_report(
    session: Session, *, idempotency_key: str | None, pipeline: str | None, build_number: int | None
) -> CiFailure | None:
    """An earlier report with the same idempotency key, or the same pipeline and build number."""
    if idempotency_key:
        found = session.scalar(
            select(CiFailure).where(CiFailure.idempotency_key == idempotency_key)
        )
        if found is not None:
            return found
    if pipeline and build_number is not None:
        return session.scalar(
            select(CiFailure).where(
                CiFailure.pipeline == pipeline, CiFailure.build_number == build_number
            )
        )
    return None


def move_run(session: Session, *, run: RepairRun, to: RunState, reason: str = "") -> bool:
    """Move a run to a new state, recording the transition.

    A finished repair cannot be moved by a late or duplicated repair task (False); a run with a
    PR moves only between the verification states.
    """
    current = RunState(run.state)
    if current == to and run.reason == reason:
        return False
    if current.terminal and not (current in VERIFICATION_STATES and to in VERIFICATION_STATES):
        return False
    session.add(Transition(run_id=run.id, from_state=run.state, to_state=to.value, reason=reason))
    run.state, run.reason, run.updated_at = to.value, reason, utcnow()
    return True


def release_held_run(session: Session, *, run: RepairRun, reason: str) -> bool:
    """Put a ``suppressed`` run back to ``classified`` (its suppression was lifted): the one way
    out of a terminal state, since that run was held back, not finished. False otherwise."""
    if run.state != RunState.SUPPRESSED.value:
        return False
    to = RunState.CLASSIFIED
    session.add(Transition(run_id=run.id, from_state=run.state, to_state=to.value, reason=reason))
    run.state, run.reason, run.updated_at, run.fix_id = to.value, reason, utcnow(), None
    return True


def open_fix_with_key(session: Session, *, dedupe_key: str) -> Fix | None:
    """The open fix PR that already covers this set of violations, if any."""
    return session.scalar(
        select(Fix).where(Fix.dedupe_key == dedupe_key, Fix.state == FixState.OPEN.value)
    )


def stale_runs(
    session: Session, *, older_than: timedelta, now: datetime | None = None
) -> Sequence[RepairRun]:
    """Runs left in a non-terminal state longer than ``older_than`` (a crash, a lost message)."""
    cutoff = (now or utcnow()) - older_than
    live = [state.value for state in RunState if state not in TERMINAL_STATES]
    return session.scalars(
        select(RepairRun).where(RepairRun.state.in_(live), RepairRun.updated_at < cutoff)
    ).all()


def unclassified_reports(session: Session, *, older_than: timedelta) -> Sequence[CiFailure]:
    """Reports that were stored but never classified (their triage message was lost)."""
    cutoff = utcnow() - older_than
    return session.scalars(
        select(CiFailure).where(
            CiFailure.classified_at.is_(None), CiFailure.triage_sent_at < cutoff
        )
    ).all()


def count_by(session: Session, column: Any, *group: Any) -> list[tuple[Any, ...]]:
    """``SELECT group..., count(column) GROUP BY group...`` as tuples."""
    rows = session.execute(select(*group, func.count(column)).group_by(*group)).all()
    return [tuple(row) for row in rows]


def unanswered_invocations(
    session: Session, *, command: str, outcome: str, older_than: timedelta
) -> Sequence[CommandInvocation]:
    """Invocations of ``command`` still at ``outcome`` (queued) long after their task was last
    sent (the message was lost, or the broker was down when it was sent)."""
    cutoff = utcnow() - older_than
    return session.scalars(
        select(CommandInvocation).where(
            CommandInvocation.command == command,
            CommandInvocation.outcome == outcome,
            CommandInvocation.comment_id.is_not(None),
            CommandInvocation.sent_at < cutoff,
        )
    ).all()


IDS_PER_QUERY = 1000


def _undispatched(older_than: timedelta) -> list[ColumnElement[bool]]:
    cutoff = utcnow() - older_than
    return [
        # ci deliveries are reports: not here
        Delivery.source.in_(("github", "gitlab", "buildkite")),
        Delivery.outcome == "stored",
        Delivery.dispatched_at < cutoff,
    ]


def undispatched_delivery_ids(session: Session, *, older_than: timedelta) -> list[int]:
    """The ids of GitHub and Buildkite deliveries still ``stored`` long after their task was
    sent (the message was lost).

    A ``ci`` delivery only holds a report's body: its work is the report's triage, which
    :func:`unclassified_reports` re-sends. ``process_delivery`` would call it invalid.
    This reads every delivery (no index: one on these columns cost the webhook intake 18-22% of
    its rate under wrk, measured), and on SQLite each row's columns after a large body are read
    through that body's overflow pages: 110-185 ms for 59,000 deliveries. Run it in a reading
    session (``bot.db.session.read_scope``), which holds no write lock meanwhile.
    """
    return list(session.scalars(select(Delivery.id).where(*_undispatched(older_than))))


def undispatched_deliveries(
    session: Session, *, older_than: timedelta, among: Collection[int]
) -> Sequence[Delivery]:
    """The deliveries of ``among`` (ids from :func:`undispatched_delivery_ids`) that are still
    undispatched: one processed or re-sent since is left out.

    Asked for in chunks: after a long outage ``among`` can pass what one statement may bind
    (65,535 parameters on PostgreSQL), and a pass that always failed would never catch up.
    """
    ids = sorted(among)
    found: list[Delivery] = []
    for start in range(0, len(ids), IDS_PER_QUERY):
        chunk = ids[start : start + IDS_PER_QUERY]
        query = select(Delivery).where(Delivery.id.in_(chunk), *_undispatched(older_than))
        found += session.scalars(query).all()
    return found
