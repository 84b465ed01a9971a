"""Before a fix is made and published: does a human decision hold these violations back?

A suppression (``bot.db.records.suppressions``) holds one dedupe key in one repository: our fix PR
for it was closed unmerged, or our merged fix for it was reverted. A run that reaches publishing
with our *merged* fix's key again means the base branch has those violations back (the base
check before publishing found them there): that is a revert, recorded as a suppression on the
spot, so a reverted fix is never re-applied automatically.

A suppression also holds its violations one by one (``held_keys``): a later sweep that finds
them among new ones fixes the new ones only, so no violation set that merely contains a
suppressed one (a new key: one more violation on the base) brings the suppressed fix back.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import RepairRun, RunState, Suppression, SuppressionReason
from bot.db.records.suppressions import (
    active_suppression,
    held_violations,
    merged_fix_with_key,
    suppress,
)
from bot.db.rows import violation_key
from bot.db.session import read_scope, session_scope
from bot.forges.base import Candidate
from bot.pipeline.repair.run_state import Stop
from fixers.sweep.outcome import FixResult

REVERT_AUTHOR = "a revert on the base branch"


def describe(row: Suppression) -> str:
    """The run's reason and the dashboard's line: who decided, when, and how to lift it."""
    when = row.created_at.strftime("%Y-%m-%d %H:%M UTC")
    if row.reason == SuppressionReason.REVERTED.value:
        what = f"suppressed: fix #{row.fix_id} was merged, then reverted ({when})"
    else:
        what = f"suppressed by {row.decided_by}: fix #{row.fix_id} was closed unmerged ({when})"
    return f"{what}; no PR is opened for these violations until a maintainer lifts it"


def _held(session: Session, candidate: Candidate) -> Suppression | None:
    row = active_suppression(session, repository=candidate.repository, dedupe_key=candidate.key)
    if row is not None:
        return row
    merged = merged_fix_with_key(session, repository=candidate.repository, dedupe_key=candidate.key)
    if merged is None:
        return None
    return suppress(
        session,
        repository=candidate.repository,
        dedupe_key=candidate.key,
        reason=SuppressionReason.REVERTED,
        decided_by=REVERT_AUTHOR,
        fix_id=merged.id,
        violation_keys=list(merged.violation_keys),
        detail=(
            f"fix #{merged.id} ({merged.url or merged.branch}) merged; its violations are back "
            f"on {candidate.base_ref or 'the base'} at {candidate.base_sha[:12]}"
        ),
    )


def held_back(settings: Settings, run_id: int, candidate: Candidate) -> Stop | None:
    """The run's end when a suppression holds its violations (counted on the row), else None."""
    with session_scope(settings.resolved_database_url) as session:
        row = _held(session, candidate)
        if row is None:
            return None
        row.held_runs += 1
        session.get_one(RepairRun, run_id).fix_id = row.fix_id
        return Stop(RunState.SUPPRESSED, describe(row))


def held_keys(settings: Settings, repository: str) -> dict[str, int]:
    """``{violation key: the active suppression holding it}`` in ``repository``."""
    with read_scope(settings.resolved_database_url) as session:
        rows = held_violations(session, repository=repository)
        return {key: row.id for key, row in rows.items()}


def held_note(
    settings: Settings, run_id: int, result: FixResult, held: dict[str, int]
) -> tuple[str, Stop | None]:
    """What the ``swept`` reason adds about the violations held back, and the run's end when
    they were all there was (the run then counts on its suppression, as ``held_back``)."""
    if not result.held:
        return "", None
    ids = sorted({held[violation_key(v)] for v in result.held})
    with session_scope(settings.resolved_database_url) as session:
        rows = [session.get_one(Suppression, i) for i in ids]
        reasons = [describe(row) for row in rows]
        note = f"; {len(result.held)} violation(s) held back ({'; '.join(reasons)})"
        if result.report.violations:
            return note, None
        rows[0].held_runs += 1
        session.get_one(RepairRun, run_id).fix_id = rows[0].fix_id
        return note, Stop(RunState.SUPPRESSED, reasons[0])
