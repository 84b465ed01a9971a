"""The pre-merge contract checks' table (``bot.pipeline.contract_check`` answers and records
them). Alembic sees it through the migrations' ``env``, which imports this module."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

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
