"""The source of truth: every delivery, report, repair run, transition and fix PR."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from bot.db.body_codec import RAW, decode_body

# A JSON list that PostgreSQL can index (jsonb; json has no btree operators): fixes.codemods.
JSON_LIST = JSON().with_variant(JSONB(), "postgresql")


def utcnow() -> datetime:
    """Timezone-aware now, the only clock the models use."""
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """Declarative base of every table."""

    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


class RunState(StrEnum):
    """A repair run's state machine; terminal states end the run."""

    RECEIVED = "received"
    CLASSIFIED = "classified"
    SWEPT = "swept"
    PATCHED = "patched"
    PR_OPENED = "pr_opened"
    VERIFYING = "verifying"
    VERIFIED = "verified"
    FAILED = "failed"
    NO_FIX_NEEDED = "no_fix_needed"
    DUPLICATE = "duplicate"
    SUPPRESSED = "suppressed"  # a human decided against this fix (see Suppression)
    REPORTED = "reported"  # autonomy "report" (.repairbot.toml): classified, nothing opened
    SUGGESTED = "suggested"  # autonomy "suggest": the fix offered as a comment, no PR
    OPTED_OUT = (
        "opted_out"  # the repository, the paths or the PR opted out (bot.db.records.opt_outs)
    )
    LOOP_GUARDED = "loop_guarded"  # a bot-caused event past its budget (bot.db.records.bot_events)
    UNCLASSIFIED = "unclassified"
    ERROR = "error"

    @property
    def terminal(self) -> bool:
        """Whether the repair part is over (what follows is verification, or nothing)."""
        return self in TERMINAL_STATES


TERMINAL_STATES = frozenset(
    {
        RunState.PR_OPENED,
        RunState.VERIFYING,
        RunState.VERIFIED,
        RunState.FAILED,
        RunState.NO_FIX_NEEDED,
        RunState.DUPLICATE,
        RunState.SUPPRESSED,
        RunState.REPORTED,
        RunState.SUGGESTED,
        RunState.OPTED_OUT,
        RunState.LOOP_GUARDED,
        RunState.UNCLASSIFIED,
        RunState.ERROR,
    }
)
# Once a PR exists, its run moves only through verification: again on every `/bot run`.
VERIFICATION_STATES = frozenset(
    {RunState.PR_OPENED, RunState.VERIFYING, RunState.VERIFIED, RunState.FAILED}
)


class FixState(StrEnum):
    """A fix PR's life on the forge."""

    OPEN = "open"
    MERGED = "merged"
    CLOSED = "closed"
    SUPERSEDED = "superseded"


class VerificationState(StrEnum):
    """A verification job's life."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    ERROR = "error"


class Verdict(StrEnum):
    """What before/after test runs say about a fix."""

    FIXED = "fixed"
    STILL_FAILING = "still_failing"
    NOT_REPRODUCED = "not_reproduced"
    NEW_FAILURES = "new_failures"


class Delivery(Base):
    """One inbound request (GitHub webhook or CI post), stored before anything acts on it."""

    __tablename__ = "deliveries"

    id: Mapped[int] = mapped_column(primary_key=True)
    source: Mapped[str] = mapped_column(String(16))
    key: Mapped[str] = mapped_column(String(200), unique=True)
    event: Mapped[str] = mapped_column(String(64))
    action: Mapped[str | None] = mapped_column(String(64))
    # As stored: read it with ``content()`` (large bodies are compressed, bot.db.body_codec).
    body: Mapped[bytes] = mapped_column(LargeBinary)
    body_codec: Mapped[str] = mapped_column(String(8), default=RAW, server_default=RAW)
    outcome: Mapped[str] = mapped_column(String(32), default="stored")
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    dispatched_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # The same work as another delivery's (a pull_request event for the same PR, action and
    # head): while one such delivery waits, the next are stored as ``coalesced``, no task sent.
    coalesce_key: Mapped[str | None] = mapped_column(String(200), index=True)

    def content(self) -> bytes:
        """The body as it was received."""
        return decode_body(self.body, self.body_codec)


class CiFailure(Base):
    """A CI failure report and what the classifier found in it."""

    __tablename__ = "reports"
    __table_args__ = (
        UniqueConstraint("pipeline", "build_number", name="uq_reports_pipeline_build"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    delivery_id: Mapped[int] = mapped_column(ForeignKey("deliveries.id"))
    idempotency_key: Mapped[str | None] = mapped_column(String(200), unique=True)
    pipeline: Mapped[str | None] = mapped_column(String(200))
    build_number: Mapped[int | None] = mapped_column(Integer)
    build_url: Mapped[str | None] = mapped_column(Text)
    repository: Mapped[str | None] = mapped_column(Text)
    pr_number: Mapped[int | None] = mapped_column(Integer)
    head_sha: Mapped[str | None] = mapped_column(String(64))
    base_ref: Mapped[str | None] = mapped_column(String(200))
    base_sha: Mapped[str | None] = mapped_column(String(64))
    stage: Mapped[str | None] = mapped_column(String(200))
    format: Mapped[str] = mapped_column(String(16))
    failure_count: Mapped[int] = mapped_column(Integer, default=0)
    # JSON: read and written as ``fixers`` Findings through ``bot.db.rows`` (findings_of).
    findings: Mapped[list[Any]] = mapped_column(default=list)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    triage_sent_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    classified_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    runs: Mapped[list[RepairRun]] = relationship(back_populates="report", order_by="RepairRun.id")


class RepairRun(Base):
    """One root cause being repaired: from received to a PR (or a reason why not)."""

    __tablename__ = "repair_runs"
    __table_args__ = (
        UniqueConstraint("report_id", "root_cause", name="uq_runs_report_root_cause"),
        Index("ix_runs_state_updated", "state", "updated_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    report_id: Mapped[int] = mapped_column(ForeignKey("reports.id"))
    root_cause: Mapped[str] = mapped_column(String(300))
    signature: Mapped[str] = mapped_column(String(64))
    # JSON: a ``fixers`` Contract through ``bot.db.rows`` (contract_of); {} for none.
    contract: Mapped[dict[str, Any]] = mapped_column(default=dict)
    state: Mapped[str] = mapped_column(String(32), default=RunState.RECEIVED.value)
    reason: Mapped[str] = mapped_column(Text, default="")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    fix_id: Mapped[int | None] = mapped_column(ForeignKey("fixes.id"), index=True)
    linked_url: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    report: Mapped[CiFailure] = relationship(back_populates="runs")
    fix: Mapped[Fix | None] = relationship(back_populates="runs")
    transitions: Mapped[list[Transition]] = relationship(order_by="Transition.id")


class Transition(Base):
    """A run's move from one state to the next, with why and when (the timeline)."""

    __tablename__ = "transitions"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("repair_runs.id"), index=True)
    from_state: Mapped[str | None] = mapped_column(String(32))
    to_state: Mapped[str] = mapped_column(String(32))
    reason: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Fix(Base):
    """A fix PR on a forge. At most one open fix per dedupe key: one PR per root cause."""

    __tablename__ = "fixes"
    __table_args__ = (
        Index(
            "uq_fixes_open_dedupe_key",
            "dedupe_key",
            unique=True,
            sqlite_where=text("state = 'open'"),
            postgresql_where=text("state = 'open'"),
        ),
        # The dashboard: counts per state and fixes per day read only this index.
        Index("ix_fixes_state_created", "state", "created_at"),
        # ... and the quality figures (bot.dashboard.quality) this one: rows are wide (diff, body).
        Index("ix_fixes_outcomes", "signature", "state", "merged_with_edits", "number", "codemods"),
        # The list's filters, newest first (keyset pagination on the id).
        Index("ix_fixes_repository_id", "repository", "id"),
        Index("ix_fixes_signature_id", "signature", "id"),
        Index("ix_fixes_state_id", "state", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    forge: Mapped[str] = mapped_column(String(16))
    repository: Mapped[str] = mapped_column(Text)
    number: Mapped[int | None] = mapped_column(Integer)
    url: Mapped[str | None] = mapped_column(Text)
    dedupe_key: Mapped[str] = mapped_column(String(64))
    signature: Mapped[str] = mapped_column(String(64))
    base_ref: Mapped[str | None] = mapped_column(String(200))
    base_sha: Mapped[str] = mapped_column(String(64))
    branch: Mapped[str] = mapped_column(String(200))
    head_sha: Mapped[str] = mapped_column(String(64))
    title: Mapped[str] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    files: Mapped[list[Any]] = mapped_column(default=list)
    # Violations as ``bot.db.rows`` stores them: display lines, and identities (dedupe).
    violations: Mapped[list[Any]] = mapped_column(default=list)
    violation_keys: Mapped[list[Any]] = mapped_column(default=list)
    contract_key: Mapped[str] = mapped_column(String(64), default="", index=True)
    diff: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), default=FixState.OPEN.value)
    state_reason: Mapped[str] = mapped_column(Text, default="")
    pr_number: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    closed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # How it landed (bot.pipeline.merge_outcome): head_sha follows every push, ours or a human's.
    codemods: Mapped[list[Any]] = mapped_column(JSON_LIST, default=list, server_default="[]")
    bot_head_sha: Mapped[str | None] = mapped_column(String(64))  # the bot's last push
    merged_head_sha: Mapped[str | None] = mapped_column(String(64))
    merged_with_edits: Mapped[bool | None] = mapped_column()  # None: merged before it was kept
    human_edit_diff: Mapped[str | None] = mapped_column(Text)  # bot head → merged head, capped

    runs: Mapped[list[RepairRun]] = relationship(back_populates="fix")
    verifications: Mapped[list[Verification]] = relationship(
        back_populates="fix", order_by="Verification.id"
    )
    comments: Mapped[list[FixComment]] = relationship(order_by="FixComment.id")


class Verification(Base):
    """One verification job of a fix: before and after test runs on a requested device."""

    __tablename__ = "verifications"

    id: Mapped[int] = mapped_column(primary_key=True)
    fix_id: Mapped[int] = mapped_column(ForeignKey("fixes.id"), index=True)
    requested_by: Mapped[str] = mapped_column(String(200), default="repairbot")
    options: Mapped[dict[str, Any]] = mapped_column(default=dict)
    requested_queue: Mapped[str] = mapped_column(String(100))
    queue: Mapped[str | None] = mapped_column(String(100))
    host: Mapped[str | None] = mapped_column(String(200))
    device: Mapped[str | None] = mapped_column(String(200))
    on_requested_device: Mapped[bool | None] = mapped_column()
    state: Mapped[str] = mapped_column(String(16), default=VerificationState.QUEUED.value)
    verdict: Mapped[str | None] = mapped_column(String(32))
    reason: Mapped[str] = mapped_column(Text, default="")
    tests: Mapped[list[Any]] = mapped_column(default=list)
    results: Mapped[dict[str, Any]] = mapped_column(default=dict)
    log: Mapped[str] = mapped_column(Text, default="")
    task_id: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Refreshed by the runner while it runs: a running row whose heartbeat stopped lost its worker.
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    fix: Mapped[Fix] = relationship(back_populates="verifications")

    # The quality figures' verified times and device-minutes read this index, not the logs.
    __table_args__ = (
        Index(
            "ix_verifications_outcomes", "fix_id", "verdict", "device", "started_at", "finished_at"
        ),
    )


class FixComment(Base):
    """Something said on a fix PR: a comment, or a commit status (``kind="status"``).

    For the local forge this table is the PR conversation; the GitHub forge mirrors what it
    posted here too, so the dashboard shows one history whatever the forge.
    """

    __tablename__ = "fix_comments"

    id: Mapped[int] = mapped_column(primary_key=True)
    fix_id: Mapped[int] = mapped_column(ForeignKey("fixes.id"), index=True)
    kind: Mapped[str] = mapped_column(String(16), default="comment")
    author: Mapped[str] = mapped_column(String(200), default="repairbot")
    body: Mapped[str] = mapped_column(Text, default="")
    context: Mapped[str | None] = mapped_column(String(200))
    state: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class CommandInvocation(Base):
    """A ``/bot`` command from a PR comment: who, what, and what the bot answered."""

    __tablename__ = "command_invocations"

    id: Mapped[int] = mapped_column(primary_key=True)
    delivery_id: Mapped[int | None] = mapped_column(ForeignKey("deliveries.id"))
    repository: Mapped[str] = mapped_column(Text)
    pr_number: Mapped[int] = mapped_column(Integer)
    fix_id: Mapped[int | None] = mapped_column(ForeignKey("fixes.id"), index=True)
    author: Mapped[str] = mapped_column(String(200))
    text: Mapped[str] = mapped_column(Text)
    command: Mapped[str | None] = mapped_column(String(32))
    arguments: Mapped[dict[str, Any]] = mapped_column(default=dict)
    outcome: Mapped[str] = mapped_column(String(32))
    reply: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # A command whose work is a task (outcome ``queued``): the comment it answers, and when its
    # task was last sent, so the reconciler can send it again if that message was lost.
    comment_id: Mapped[int | None] = mapped_column(BigInteger)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Whether the bot answered on GitHub (a reply or a reaction), or why not: a reply budget
    # was spent (bot.commands.reply_budget); the rows answered are what the budgets count.
    answered: Mapped[bool] = mapped_column(default=False)
    withheld: Mapped[str | None] = mapped_column(Text)


class SuppressionReason(StrEnum):
    """Why the bot stopped proposing a fix: what a human did."""

    CLOSED_UNMERGED = "closed_unmerged"  # someone closed our fix PR without merging it
    REVERTED = "reverted"  # our merged fix was reverted: the same violations are back


class Suppression(Base):
    """A human decision the bot keeps: these violations (one dedupe key, one repository) open no
    PR again until a maintainer lifts it. A later violation set that contains them (a new key)
    is fixed without them: ``violation_keys`` are held one by one (issue 36)."""

    __tablename__ = "suppressions"
    __table_args__ = (
        Index(
            "uq_suppressions_active_key",
            "repository",
            "dedupe_key",
            unique=True,
            sqlite_where=text("lifted_at IS NULL"),
            postgresql_where=text("lifted_at IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    repository: Mapped[str] = mapped_column(String(200))
    dedupe_key: Mapped[str] = mapped_column(String(64))
    reason: Mapped[str] = mapped_column(String(32))
    fix_id: Mapped[int | None] = mapped_column(ForeignKey("fixes.id"), index=True)
    decided_by: Mapped[str] = mapped_column(String(200))
    detail: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    held_runs: Mapped[int] = mapped_column(Integer, default=0)  # failures it kept from a PR
    violation_keys: Mapped[list[Any]] = mapped_column(default=list)  # the violations it holds
    lifted_by: Mapped[str | None] = mapped_column(String(200))
    lifted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
