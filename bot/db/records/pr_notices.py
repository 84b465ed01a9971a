"""Fan-out notices: the one comment on each PR whose pipeline failed because of a violation on
its base branch (``bot.pipeline.fan_out.task`` posts and edits them).

The table lives in its own module (the models module is at its size budget); Alembic sees it
because the migrations' ``env`` imports this module. One row per (repository, PR, fix): the
unique constraint decides between two runs of the same PR recording it at once.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import DateTime, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from bot.db.models import Base, utcnow


class NoticeState(StrEnum):
    """Where a notice stands on GitHub."""

    PENDING = "pending"  # recorded, not posted yet
    POSTED = "posted"  # on the PR (``comment_id``); edited since ``edits`` times
    FAILED = "failed"  # refused for good (no such PR, ...): ``reason`` says why; not retried


class PrNotice(Base):
    """The one comment on a PR saying which fix PR carries its failure's root cause, and how far
    it is. Edited in place, never repeated."""

    __tablename__ = "pr_notices"
    __table_args__ = (
        UniqueConstraint("repository", "pr_number", "fix_id", name="uq_pr_notices_pr_fix"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    repository: Mapped[str] = mapped_column(String(200))
    pr_number: Mapped[int] = mapped_column(Integer)
    fix_id: Mapped[int] = mapped_column(ForeignKey("fixes.id"), index=True)
    state: Mapped[str] = mapped_column(String(16), default=NoticeState.PENDING.value)
    reason: Mapped[str] = mapped_column(Text, default="")
    comment_id: Mapped[str | None] = mapped_column(String(64))
    comment_url: Mapped[str | None] = mapped_column(Text)
    body_digest: Mapped[str] = mapped_column(String(64), default="")  # of the text on GitHub
    edits: Mapped[int] = mapped_column(Integer, default=0)
    # Compare-and-set between tasks syncing one notice at once: each new text planned bumps
    # ``version`` (``planned_digest`` is its digest); a plan older than ``version`` is dropped
    # unsent, and ``sent_version`` is the newest one GitHub was sent.
    version: Mapped[int] = mapped_column(Integer, default=0)
    sent_version: Mapped[int] = mapped_column(Integer, default=0)
    planned_digest: Mapped[str] = mapped_column(String(64), default="")
    rerun_comment_id: Mapped[str | None] = mapped_column(String(64))  # the re-run command's
    # The PR head that failed (the report's), and why no re-run command was posted for it
    # (its head moved since: only a maintainer may run CI on commits nobody reviewed).
    failed_head: Mapped[str | None] = mapped_column(String(64))
    rerun_held: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
