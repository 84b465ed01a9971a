"""PR opt-outs: a PR whose author (or a maintainer) asked the bot to leave it alone, one row each.

A PR is opted out by ``/repairbot opt-out`` (``via="command"``) or by carrying the opt-out
label (``via="label"``, ``Settings.opt_out_label``); ``/repairbot opt-in`` and removing the label
lift their own kind. While any row of a PR is active the bot runs no repair, posts no review,
comment or check for that PR's failures and events.

The table lives in its own module (the models module is at its size budget); Alembic sees it
because the migrations' ``env`` imports this module. Data functions in the style of ``crud``:
one session in, no commits. At most one active row per (repository, PR, kind): the partial
unique index decides between two processes recording the same opt-out at once.
"""

from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import DateTime, Index, Integer, String, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column

from bot.db.models import Base, utcnow


class OptOutVia(enum.StrEnum):
    """How a PR was opted out."""

    COMMAND = "command"  # /repairbot opt-out by its author or a maintainer
    LABEL = "label"  # the opt-out label on the PR


class PrOptOut(Base):
    """A PR the bot leaves alone: who asked, how, when, and who lifted it."""

    __tablename__ = "pr_opt_outs"
    __table_args__ = (
        Index(
            "uq_pr_opt_outs_active",
            "repository",
            "pr_number",
            "via",
            unique=True,
            sqlite_where=text("lifted_at IS NULL"),
            postgresql_where=text("lifted_at IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    repository: Mapped[str] = mapped_column(String(200))
    pr_number: Mapped[int] = mapped_column(Integer)
    via: Mapped[str] = mapped_column(String(16))
    opted_out_by: Mapped[str] = mapped_column(String(200))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    lifted_by: Mapped[str | None] = mapped_column(String(200))
    lifted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    def describe(self) -> str:
        """A run's reason and a reply: who opted the PR out, how and when."""
        when = self.at.strftime("%Y-%m-%d %H:%M UTC")
        how = "with /repairbot opt-out" if self.via == OptOutVia.COMMAND else "with its label"
        return f"{self.repository}#{self.pr_number} opted out by {self.opted_out_by} {how} ({when})"


def active_opt_outs(session: Session, *, repository: str, pr_number: int) -> list[PrOptOut]:
    """The active opt-outs of one PR (label and command), oldest first."""
    return list(
        session.scalars(
            select(PrOptOut)
            .where(
                PrOptOut.repository == repository,
                PrOptOut.pr_number == pr_number,
                PrOptOut.lifted_at.is_(None),
            )
            .order_by(PrOptOut.id)
        )
    )


def opted_out(
    session: Session, *, repository: str | None, pr_number: int | None
) -> PrOptOut | None:
    """The row that keeps the bot away from this PR (None: not opted out, or no PR named)."""
    if not repository or pr_number is None:
        return None
    rows = active_opt_outs(session, repository=repository, pr_number=pr_number)
    return rows[0] if rows else None


def opt_out(
    session: Session, *, repository: str, pr_number: int, via: OptOutVia, by: str
) -> tuple[PrOptOut, bool]:
    """Record an opt-out unless one of this kind is active; the row, and whether it is new."""
    for row in active_opt_outs(session, repository=repository, pr_number=pr_number):
        if row.via == via.value:
            return row, False
    row = PrOptOut(repository=repository, pr_number=pr_number, via=via.value, opted_out_by=by[:200])
    try:
        with session.begin_nested():
            session.add(row)
            session.flush()
    except IntegrityError:  # recorded by another process meanwhile
        return opt_out(session, repository=repository, pr_number=pr_number, via=via, by=by)
    return row, True


def lift(
    session: Session, *, repository: str, pr_number: int, via: OptOutVia, by: str
) -> list[PrOptOut]:
    """Lift the active opt-outs of kind ``via`` of one PR; the rows lifted."""
    now, lifted = utcnow(), []
    for row in active_opt_outs(session, repository=repository, pr_number=pr_number):
        if row.via == via.value:
            row.lifted_by, row.lifted_at = by[:200], now
            lifted.append(row)
    return lifted
