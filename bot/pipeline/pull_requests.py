"""``pull_request`` events: our PRs' state, and superseding ours when another PR fixed it.

A merged PR that is not ours supersedes each open fix of ours on the same base branch whose
violations the sweep no longer finds after the merge: ours is closed with a comment naming it.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import Fix, FixState, SuppressionReason, utcnow
from bot.db.rows import contract_of
from bot.db.suppressions import lift_suppressions, suppress
from bot.forges.github.events import PullRequestEvent, is_bot_account
from bot.forges.github.forge import GitHubForge
from bot.forges.github.mirror import sync_mirror
from bot.forges.github.publish import remaining_violations
from bot.pipeline.fan_out import queue_refresh
from bot.pipeline.merge_outcome import record_merge


def our_fix(session: Session, event: PullRequestEvent) -> Fix | None:
    """Our fix behind this PR, if it is one of ours."""
    return session.scalar(
        select(Fix).where(
            Fix.forge == "github", Fix.repository == event.repository, Fix.number == event.number
        )
    )


def remember_closed(session: Session, fix: Fix, login: str) -> None:
    """A human closed our fix unmerged: these violations open no PR again until lifted."""
    row = suppress(
        session,
        repository=fix.repository,
        dedupe_key=fix.dedupe_key,
        reason=SuppressionReason.CLOSED_UNMERGED,
        decided_by=login or "someone on GitHub",
        fix_id=fix.id,
        detail=f"PR #{fix.number} closed without merging",
    )
    fix.state_reason = f"closed unmerged by {row.decided_by}: its violations are suppressed"


def track_ours(session: Session, settings: Settings, fix: Fix, event: PullRequestEvent) -> str:
    """Mirror our PR's state: merged, closed, reopened, or a new head pushed by someone."""
    if event.action == "closed" and fix.state == FixState.OPEN.value:
        fix.state = FixState.MERGED.value if event.merged else FixState.CLOSED.value
        fix.state_reason = "merged on GitHub" if event.merged else "closed on GitHub"
        fix.closed_at = utcnow()
        if not event.merged and not is_bot_account(settings, event.sender):
            remember_closed(session, fix, event.sender)
        queue_refresh(session, fix)  # the affected PRs' notices say merged (or closed), once
    elif event.action == "reopened" and fix.state in (FixState.CLOSED.value,):
        try:
            with session.begin_nested():
                fix.state, fix.state_reason, fix.closed_at = FixState.OPEN.value, "reopened", None
                session.flush()
            # Reopening is the human taking their decision back.
            lift_suppressions(session, fix=fix, lifted_by=event.sender or "a reopen on GitHub")
            queue_refresh(session, fix)  # its notices say open again
        except IntegrityError:
            return f"fix #{fix.id} reopened, but another open fix has its key; left closed"
    elif event.action == "synchronize":
        fix.head_sha = event.head_sha
    else:
        return f"fix #{fix.id}: {event.action} needs nothing"
    fix.updated_at = utcnow()
    return f"fix #{fix.id} is {fix.state} (head {fix.head_sha[:12]})"


def supersede(
    session: Session, settings: Settings, forge: GitHubForge, event: PullRequestEvent
) -> str:
    """Close each open fix of ours that the merged PR made unnecessary."""
    candidates = session.scalars(
        select(Fix).where(
            Fix.forge == "github",
            Fix.repository == event.repository,
            Fix.state == FixState.OPEN.value,
            Fix.number.is_not(None),
        )
    ).all()
    candidates = [f for f in candidates if f.base_ref in (None, event.base_ref) and f.runs]
    if not candidates:
        return "no open fix of ours to check"
    mirror = sync_mirror(settings, event.repository, forge.token())
    commit = event.merge_commit_sha or f"refs/heads/{event.base_ref}"
    closed = []
    for fix in candidates:
        contract = contract_of(fix.runs[0])
        if contract is None:  # a fix always answers a run with a contract
            continue
        left = remaining_violations(settings, mirror, commit, contract, list(fix.violation_keys))
        if left:
            continue
        assert fix.number is not None
        forge.comment(
            session,
            fix,
            f"Superseded by #{event.number} ({event.url}), which fixed the same violations "
            f"of the `{contract.base}` contract. Closing this PR.",
            key=f"superseded:{fix.id}:{event.number}",
        )
        forge.close_pull(fix.repository, fix.number)
        fix.state = FixState.SUPERSEDED.value
        fix.state_reason = f"superseded by #{event.number} ({event.url})"
        fix.closed_at = fix.updated_at = utcnow()
        queue_refresh(session, fix)
        closed.append(f"#{fix.number}")
    return f"closed {', '.join(closed)} as superseded" if closed else "nothing superseded"


def handle_pull_request(
    session: Session, settings: Settings, forge: GitHubForge, event: PullRequestEvent
) -> str:
    """Our PR → track its state; someone else's merged PR → supersede what it fixed."""
    fix = our_fix(session, event)
    if fix is not None:
        tracked = track_ours(session, settings, fix, event)
        landed = record_merge(session, fix, event)  # unchanged, or its edits read after
        return f"{tracked}; {landed}" if landed else tracked
    if event.action == "closed" and event.merged:
        return supersede(session, settings, forge, event)
    return f"{event.action} of a PR that is not ours: nothing to do"
