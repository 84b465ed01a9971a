"""The loop guard's budget: every bot-caused event the bot was asked to act on, one row each.

An event caused by a bot (a CI failure on a commit we pushed, a PR pushed to by another bot) is
acted on only while its PR has budget left in the current clock hour (UTC):
``Settings.bot_event_budget_per_pr_hour`` slots per (repository, PR, hour). Events past the
budget are recorded too (``outcome="guarded"``, no slot) and not acted on. Human-caused events
never come here.

The database decides, so concurrent workers count exactly: an acted-on row holds one numbered
slot, and the unique constraint on (repository, PR, hour, slot) lets only one transaction take
each; a loser tries the next slot. Guarded rows have no slot (NULLs never collide). The unique
(kind, event key) makes recording idempotent: a redelivered webhook or a re-sent task finds its
first row and its first answer.

The table lives in its own module (the models module is at its size budget); Alembic sees it
because the migrations' ``env`` imports this module. Data functions in the style of ``crud``:
one session in, no commits (each insert in a SAVEPOINT).
"""

from __future__ import annotations

import enum
import hashlib
from datetime import datetime

from sqlalchemy import DateTime, Integer, String, UniqueConstraint, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column

from bot.db.models import Base, utcnow

NO_PR = 0  # events on a branch with no PR known share one budget per repository
KEY_CHARS = 200


class EventOutcome(enum.StrEnum):
    """What the guard decided for one bot-caused event."""

    ACTED = "acted"  # within the budget: the bot acts on it
    GUARDED = "guarded"  # past the budget: recorded, not acted on


class BotEvent(Base):
    """One bot-caused event: where, what kind, which delivery or report, who caused it."""

    __tablename__ = "bot_events"
    __table_args__ = (
        UniqueConstraint("kind", "event_key", name="uq_bot_events_event"),
        UniqueConstraint(
            "repository", "pr_number", "hour", "slot", name="uq_bot_events_pr_hour_slot"
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    repository: Mapped[str] = mapped_column(String(200))
    pr_number: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(32))  # ci_failure, pull_request, ...
    event_key: Mapped[str] = mapped_column(String(KEY_CHARS))  # report:N, delivery id, ...
    caused_by: Mapped[str] = mapped_column(String(200))
    hour: Mapped[int] = mapped_column(Integer)  # hours since the epoch (UTC): the budget window
    slot: Mapped[int | None] = mapped_column(Integer)  # 1..budget when acted on
    outcome: Mapped[str] = mapped_column(String(16))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    def describe(self, budget: int) -> str:
        """The run's reason (or the delivery's outcome) when this event is not acted on."""
        pr = f"#{self.pr_number}" if self.pr_number != NO_PR else "(no PR)"
        return (
            f"loop guard: {self.kind} {self.event_key} on {self.repository}{pr} was caused by "
            f"{self.caused_by}; the bot already acted on {budget} bot-caused event(s) for this "
            f"PR this hour (REPAIRBOT_BOT_EVENT_BUDGET_PER_PR_HOUR={budget}): not acted on"
        )


def hour_of(at: datetime) -> int:
    """The budget window ``at`` falls in: whole hours since the epoch."""
    return int(at.timestamp() // 3600)


def event_key(text: str) -> str:
    """``text`` as an event key: itself, or a digest when it would not fit (never truncated)."""
    if len(text) <= KEY_CHARS:
        return text
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _recorded(session: Session, kind: str, key: str) -> BotEvent | None:
    return session.scalar(select(BotEvent).where(BotEvent.kind == kind, BotEvent.event_key == key))


def _insert(session: Session, row: BotEvent) -> bool:
    """Insert ``row`` in a SAVEPOINT; False when a unique constraint refused it."""
    try:
        with session.begin_nested():
            session.add(row)
            session.flush()
    except IntegrityError:
        return False
    return True


def taken_slots(session: Session, *, repository: str, pr_number: int, hour: int) -> set[int]:
    """The slots of this PR's ``hour`` already taken: its acted-on bot-caused events."""
    return set(
        session.scalars(
            select(BotEvent.slot).where(
                BotEvent.repository == repository,
                BotEvent.pr_number == pr_number,
                BotEvent.hour == hour,
                BotEvent.slot.is_not(None),
            )
        )
    )


def take_budget(
    session: Session,
    *,
    repository: str,
    pr_number: int | None,
    kind: str,
    key: str,
    caused_by: str,
    budget: int,
    at: datetime | None = None,
) -> BotEvent:
    """Record one bot-caused event and decide it: a slot of its PR's hour (``acted``), or
    ``guarded`` when all ``budget`` slots are taken. The same (kind, key) again returns the
    first row, whatever the hour now."""
    if budget < 0:
        raise ValueError(f"budget must be 0 or more, not {budget}")
    key = event_key(key)
    earlier = _recorded(session, kind, key)
    if earlier is not None:
        return earlier
    when = at or utcnow()
    hour = hour_of(when)
    number = NO_PR if pr_number is None else pr_number

    def row(slot: int | None) -> BotEvent:
        outcome = EventOutcome.ACTED if slot is not None else EventOutcome.GUARDED
        return BotEvent(
            repository=repository[:200],
            pr_number=number,
            kind=kind,
            event_key=key,
            caused_by=caused_by[:200],
            hour=hour,
            slot=slot,
            outcome=outcome.value,
            at=when,
        )

    taken = taken_slots(session, repository=repository[:200], pr_number=number, hour=hour)
    # Free slots in order (a rolled-back taker leaves a gap), then none: guarded.
    for slot in [*(s for s in range(1, budget + 1) if s not in taken), None]:
        candidate = row(slot)
        if _insert(session, candidate):
            return candidate
        raced = _recorded(session, kind, key)  # another process recorded this very event
        if raced is not None:
            return raced
    raise AssertionError("unreachable: a row without a slot collides only on its event key")
