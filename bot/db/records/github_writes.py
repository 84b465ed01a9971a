"""The GitHub outbox's table: each content-creating request, recorded before it is sent
(``bot.forges.github.outbox`` writes and reads it). Alembic sees it through the migrations'
``env``, which imports this module."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from bot.db.models import Base, utcnow


class GitHubWrite(Base):
    """A content-creating GitHub request, recorded before it is sent.

    The key makes it idempotent (a retried POST never posts twice: the row says whether and where
    it landed); the slots reserved in the last minute are the content-creation rate, across
    processes. A deferred write (asked for inside a transaction) keeps its ``request`` until the
    send task has sent it, or GitHub refused it for good (``error``).
    """

    __tablename__ = "github_writes"

    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(200), unique=True)
    kind: Mapped[str] = mapped_column(String(32))
    repository: Mapped[str] = mapped_column(String(200))
    target: Mapped[str] = mapped_column(String(200), default="")
    remote_id: Mapped[str | None] = mapped_column(String(64))
    remote_url: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, index=True
    )
    done_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # When the write took its place under the per-minute cap (None: not sent yet).
    slot_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), index=True)
    # When the attempt holding that slot failed (it raised, its answer unknown): the next one
    # looks on GitHub and sends at once, instead of waiting on it until the slot expires.
    failed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # A deferred write: what to send, when its task was last sent, why GitHub refused it.
    request: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), index=True)
    error: Mapped[str | None] = mapped_column(Text)
