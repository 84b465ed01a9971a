"""The pre-merge contract checks' tables: their answers (``bot.pipeline.contract_check.task``
answers and records them) and the checks queued, one per PR. Alembic sees them through the
migrations' ``env``, which imports this module."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import BigInteger, DateTime, Integer, String, Text, UniqueConstraint, delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column

from bot.db.models import Base, utcnow


class ContractCheck(Base):
    """One pre-merge contract check: a PR's head merged onto its base, and what was answered.

    One row per (repository, PR, head, base): a check whose four were already answered (a
    redelivered webhook, a push that changed nothing) posts nothing.
    """

    __tablename__ = "contract_checks"
    __table_args__ = (
        UniqueConstraint(
            "repository", "number", "head_sha", "base_sha", name="uq_contract_checks_pr_commits"
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    repository: Mapped[str] = mapped_column(String(200))
    number: Mapped[int] = mapped_column(Integer)
    head_sha: Mapped[str] = mapped_column(String(64))
    base_sha: Mapped[str] = mapped_column(String(64))
    # success, failure, error (the commit status set), or skipped (none could be set).
    state: Mapped[str] = mapped_column(String(16))
    description: Mapped[str] = mapped_column(Text, default="")
    # The introduced violations as ``bot.db.rows`` stores a fix's: display lines.
    introduced: Mapped[list[Any]] = mapped_column(default=list)
    # What the check wrote under the data dir (its trees), charged to its budget.
    written_files: Mapped[int] = mapped_column(Integer, default=0)
    written_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class QueuedCheck(Base):
    """A contract check of a PR sent to the broker and not started yet: one per PR.

    The check reads the PR's head when it starts, so one queued check answers every
    ``synchronize`` that arrives before then; a flood of events for one PR queues one task
    (``bot.pipeline.contract_check.triggers``). The task removes the row when it starts; the
    reconciler sends the task again when the row grows old (its message was lost).
    """

    __tablename__ = "queued_checks"
    __table_args__ = (UniqueConstraint("repository", "number", name="uq_queued_checks_pr"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    repository: Mapped[str] = mapped_column(String(200))
    number: Mapped[int] = mapped_column(Integer)
    queued_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


def queue_check(session: Session, *, repository: str, number: int) -> bool:
    """Record that a check of PR ``number`` is queued; False when one already is (nothing more
    to send: it reads the PR's head when it starts)."""
    found = session.scalar(
        select(QueuedCheck.id).where(
            QueuedCheck.repository == repository, QueuedCheck.number == number
        )
    )
    if found is not None:
        return False
    try:
        with session.begin_nested():
            session.add(QueuedCheck(repository=repository, number=number))
    except IntegrityError:  # queued by another transaction meanwhile
        return False
    return True


def start_check(session: Session, *, repository: str, number: int) -> None:
    """The queued check of PR ``number`` starts: a later event queues the next one."""
    session.execute(
        delete(QueuedCheck).where(
            QueuedCheck.repository == repository, QueuedCheck.number == number
        )
    )


def stale_queued_checks(session: Session, *, older_than: timedelta) -> list[QueuedCheck]:
    """Checks queued longer ago than ``older_than`` that have not started."""
    since = utcnow() - older_than
    return list(session.scalars(select(QueuedCheck).where(QueuedCheck.queued_at < since)))
