"""``/fixes/{id}``: a fix PR with its timeline, evidence, verifications and command history."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session, selectinload

from bot.dashboard.formatting import aware, duration_text
from bot.dashboard.queries import classes_of
from bot.dashboard.results import TestResult, test_results
from bot.db.models import (
    CiFailure,
    CommandInvocation,
    Fix,
    RepairRun,
    Suppression,
    Verification,
)
from bot.db.records.pr_notices import PrNotice
from bot.db.records.suppressions import suppressions_of
from bot.db.tally_parts import seconds_between

STATE_LABELS = {
    "classified": "Classified",
    "swept": "Swept the repository",
    "patched": "Patched",
    "pr_opened": "PR opened",
    "verifying": "Verifying",
    "verified": "Verified",
    "failed": "Repair failed",
    "no_fix_needed": "No fix needed",
    "duplicate": "Duplicate of an open fix",
    "suppressed": "Held back by a human decision",
    "reported": "Reported only (autonomy: report)",
    "suggested": "Suggested, no PR (autonomy: suggest)",
    "opted_out": "Opted out",
    "loop_guarded": "Stopped by the loop guard (bot-caused, over budget)",
    "unclassified": "Unclassified",
    "error": "Error",
}
MAX_LOG_CHARS = 200_000


@dataclass(frozen=True)
class Event:
    """One line of the timeline."""

    at: datetime | None
    kind: str
    title: str
    detail: str = ""
    link: str | None = None


@dataclass(frozen=True)
class VerificationView:
    """A verification with its per-test results and log."""

    row: Verification
    tests: list[TestResult]
    log: str
    log_truncated: bool

    @property
    def took(self) -> str:
        """How long the job ran."""
        return duration_text(seconds_between(self.row.started_at, self.row.finished_at))


@dataclass
class FixDetail:
    """Everything ``/fixes/{id}`` shows."""

    fix: Fix
    reports: list[CiFailure]
    findings: list[dict[str, Any]]
    classes: list[str]
    verifications: list[VerificationView]
    commands: list[CommandInvocation]
    suppressions: list[Suppression] = field(default_factory=list)
    notices: list[PrNotice] = field(default_factory=list)  # the affected PRs told (fan-out)
    timeline: list[Event] = field(default_factory=list)

    @property
    def holding(self) -> Suppression | None:
        """The suppression that holds these violations now, if any."""
        return next((s for s in self.suppressions if s.lifted_at is None), None)

    @property
    def failure_at(self) -> datetime | None:
        """When the first failure behind this fix arrived."""
        times = [aware(r.received_at) for r in self.reports]
        return min((t for t in times if t is not None), default=None)

    @property
    def time_to_pr(self) -> float | None:
        """Seconds from the first failure to the PR."""
        return seconds_between(self.failure_at, self.fix.created_at)


def tail(text: str, limit: int = MAX_LOG_CHARS) -> tuple[str, bool]:
    """The last ``limit`` characters of a log, and whether anything was cut."""
    return (text[-limit:], True) if len(text) > limit else (text, False)


def load_fix(session: Session, fix_id: int) -> FixDetail | None:
    """The fix with everything around it, or None."""
    fix = session.scalar(
        select(Fix)
        .where(Fix.id == fix_id)
        .options(
            selectinload(Fix.runs).selectinload(RepairRun.report),
            selectinload(Fix.runs).selectinload(RepairRun.transitions),
            selectinload(Fix.verifications),
            selectinload(Fix.comments),
        )
    )
    if fix is None:
        return None
    reports = list({run.report.id: run.report for run in fix.runs}.values())
    commands = list(
        session.scalars(
            select(CommandInvocation)
            .where(
                or_(
                    CommandInvocation.fix_id == fix.id,
                    and_(
                        CommandInvocation.fix_id.is_(None),
                        CommandInvocation.repository == fix.repository,
                        CommandInvocation.pr_number == fix.number,
                    ),
                )
            )
            .order_by(CommandInvocation.id)
        )
    )
    verifications = [_verification(v) for v in fix.verifications]
    detail = FixDetail(
        fix=fix,
        reports=reports,
        findings=_findings(fix, reports),
        classes=classes_of(fix.violations or []),
        verifications=verifications,
        commands=commands,
        suppressions=suppressions_of(session, fix),
        notices=list(
            session.scalars(
                select(PrNotice).where(PrNotice.fix_id == fix.id).order_by(PrNotice.pr_number)
            )
        ),
    )
    detail.timeline = timeline(detail)
    return detail


def _verification(row: Verification) -> VerificationView:
    log, cut = tail(row.log or "")
    return VerificationView(row, test_results(row.results, row.tests), log, cut)


def _findings(fix: Fix, reports: list[CiFailure]) -> list[dict[str, Any]]:
    """The findings of this fix's signature (all findings when none match), with the report."""
    everything = [
        {**finding, "report_id": report.id}
        for report in reports
        for finding in report.findings or []
        if isinstance(finding, dict)
    ]
    matching = [f for f in everything if f.get("signature") == fix.signature]
    return matching or everything


def timeline(detail: FixDetail) -> list[Event]:
    """Received, classified, swept, PR opened, each verification, comments, merged or closed."""
    fix = detail.fix
    events = [*_received(detail), *_transitions(detail)]
    for view in detail.verifications:
        events += _verification_events(view.row)
    events += _conversation(detail)
    events += _suppression_events(detail)
    if fix.closed_at or fix.state != "open":
        events.append(Event(fix.closed_at, f"s-{fix.state}", f"PR {fix.state}", fix.state_reason))
    order = {id(e): n for n, e in enumerate(events)}
    last = datetime.max.replace(tzinfo=UTC)
    events.sort(key=lambda e: (aware(e.at) or last, order[id(e)]))
    return events


def _suppression_events(detail: FixDetail) -> list[Event]:
    events = []
    for row in detail.suppressions:
        held = f"{row.held_runs} failure(s) held back since"
        title = f"Suppressed by {row.decided_by} ({row.reason.replace('_', ' ')})"
        events.append(Event(row.created_at, "suppressed", title, f"{row.detail} · {held}"))
        if row.lifted_at is not None:
            events.append(Event(row.lifted_at, "lifted", f"Suppression lifted by {row.lifted_by}"))
    return events


def _received(detail: FixDetail) -> list[Event]:
    events = []
    for report in detail.reports:
        where = " ".join(str(p) for p in (report.pipeline, f"#{report.build_number}") if p)
        summary = f"{where} · {report.stage or 'no stage'} · {report.failure_count} failing"
        events.append(
            Event(report.received_at, "received", "Failure received", summary, report.build_url)
        )
    return events


def _transitions(detail: FixDetail) -> list[Event]:
    return [
        Event(
            move.at,
            move.to_state,
            f"{STATE_LABELS.get(move.to_state, move.to_state)} (run {run.id})",
            move.reason,
        )
        for run in detail.fix.runs
        for move in run.transitions
    ]


def _verification_events(v: Verification) -> list[Event]:
    requested = f"by {v.requested_by} · queue {v.requested_queue}"
    events = [Event(v.created_at, "verify", f"Verification {v.id} requested", requested)]
    if v.started_at:
        where = f"{v.device or 'device unknown'} on {v.host or 'unknown host'}"
        events.append(Event(v.started_at, "verify", f"Verification {v.id} started", where))
    if v.finished_at:
        verdict = (v.verdict or v.state).replace("_", " ")
        title = f"Verification {v.id}: {verdict}"
        events.append(Event(v.finished_at, f"v-{v.verdict or v.state}", title, v.reason))
    return events


def _conversation(detail: FixDetail) -> list[Event]:
    events = []
    for comment in detail.fix.comments:
        if comment.kind == "status":
            title = f"Status {comment.context or ''}: {comment.state or ''}".strip()
            events.append(Event(comment.created_at, "status", title, comment.body))
        else:
            events.append(Event(comment.created_at, "comment", f"Comment by {comment.author}", ""))
    for command in detail.commands:
        outcome = f"by {command.author} → {command.outcome}"
        events.append(Event(command.created_at, "command", f"{command.text[:80]}", outcome))
    return events
