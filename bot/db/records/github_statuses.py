"""Commit statuses as last asked for: one row per (repository, sha, context), so that the same
status asked for twice (two contract checks of one head at once, a redelivery) is one write,
and a changed one is a new write that supersedes the older (``bot.forges.github.statuses``).

Alembic sees the table through the migrations' ``env``, which imports this module.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from bot.db.models import Base, utcnow


class GitHubStatus(Base):
    """The status last asked for on one commit and context, and its version: each change of
    state, description or link bumps it, and the version names the outbox write
    (``status:{repository}:{sha}:{context}:{version}``), so an equal request is the same write."""

    __tablename__ = "github_statuses"
    __table_args__ = (
        UniqueConstraint("repository", "sha", "context", name="uq_github_statuses_context"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    repository: Mapped[str] = mapped_column(String(200))
    sha: Mapped[str] = mapped_column(String(64))
    context: Mapped[str] = mapped_column(String(200))
    state: Mapped[str] = mapped_column(String(16))
    description: Mapped[str] = mapped_column(Text, default="")
    target_url: Mapped[str | None] = mapped_column(Text)
    version: Mapped[int] = mapped_column(Integer, default=1)
    # The newest version POSTed, and a digest of what it said: an equal later version (one in
    # between dropped unsent) is already what GitHub shows, and is not POSTed again.
    shown_version: Mapped[int] = mapped_column(Integer, default=0)
    shown_digest: Mapped[str] = mapped_column(String(64), default="")
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
