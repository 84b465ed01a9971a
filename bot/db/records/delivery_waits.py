"""Deliveries waiting on another service: a stored delivery whose handler could not reach a CI's
or forge's API (rate limited past the longest wait, 5xx past the last attempt, the connection
refused) is retried with backoff and stays stored, so nothing is lost; this table says that it
waits and why, for the dashboard's failures page.

One row per waiting delivery, written when an attempt gives up and deleted in the transaction
that finally records the delivery's outcome. The table holds only what waits now, so the page
reads a handful of rows however many deliveries there have been. Data functions in the style of
``crud``: one session in, no commits.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Integer, String, delete, func, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from bot.db.models import Base, Delivery, utcnow

REASON_CHARS = 300
SHOWN = 20  # the page lists this many, the oldest first, and counts the rest


class DeliveryWait(Base):
    """A stored delivery whose last attempt could not reach an API, and why."""

    __tablename__ = "delivery_waits"

    delivery_id: Mapped[int] = mapped_column(
        ForeignKey("deliveries.id", ondelete="CASCADE"), primary_key=True
    )
    reason: Mapped[str] = mapped_column(String(REASON_CHARS))
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    since: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


@dataclass(frozen=True)
class Waiting:
    """A waiting delivery as the failures page shows it."""

    delivery_id: int
    source: str
    event: str
    reason: str
    attempts: int
    since: datetime
    last_at: datetime


def note_wait(session: Session, delivery_id: int, reason: str) -> None:
    """Record that an attempt at ``delivery_id`` gave up for ``reason`` (one more attempt)."""
    row = session.get(DeliveryWait, delivery_id, with_for_update=True)
    if row is None:
        session.add(DeliveryWait(delivery_id=delivery_id, reason=reason[:REASON_CHARS]))
        return
    row.reason, row.attempts, row.last_at = reason[:REASON_CHARS], row.attempts + 1, utcnow()


def clear_wait(session: Session, delivery_id: int) -> None:
    """The delivery no longer waits (its outcome is being recorded)."""
    session.execute(delete(DeliveryWait).where(DeliveryWait.delivery_id == delivery_id))


def waiting(session: Session) -> tuple[list[Waiting], int]:
    """The oldest ``SHOWN`` waiting deliveries, and how many wait in all."""
    rows = session.execute(
        select(DeliveryWait, Delivery.source, Delivery.event)
        .join(Delivery, Delivery.id == DeliveryWait.delivery_id)
        .where(Delivery.outcome == "stored")
        .order_by(DeliveryWait.since, DeliveryWait.delivery_id)
        .limit(SHOWN)
    ).all()
    shown = [
        Waiting(w.delivery_id, source, event, w.reason, w.attempts, w.since, w.last_at)
        for w, source, event in rows
    ]
    if len(shown) < SHOWN:
        return shown, len(shown)
    return shown, session.scalar(select(func.count()).select_from(DeliveryWait)) or 0
