"""``pull_request`` events: our PRs' state, and superseding ours when another PR fixed it.

A merged PR that is not ours supersedes each open fix of ours on the same base branch whose
violations the sweep no longer finds after the merge: ours is closed with a comment naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import Fix, FixState, SuppressionReason, utcnow
from bot.db.records.suppressions import lift_suppressions, suppress
from bot.db.rows import contract_of
from bot.db.session import Reading, Writes
from bot.forges.github.events import PullRequestEvent, is_bot_account
from bot.forges.github.forge import GitHubForge
from bot.forges.github.mirror import sync_mirror
from bot.forges.github.publish import remaining_violations
from bot.pipeline.fan_out.task import queue_refresh
from bot.pipeline.merge_outcome import record_merge
from fixers.contracts.model import Contract


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
        violation_keys=list(fix.violation_keys),
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


@dataclass(frozen=True)
class _Candidate:
    """An open fix of ours the merged PR may have made unnecessary, as read before checking."""

    fix_id: int
    repository: str
    number: int
    contract: Contract
    violation_keys: list[str]


def _candidates(reading: Reading, event: PullRequestEvent) -> list[_Candidate]:
    with reading() as session:
        fixes = session.scalars(
            select(Fix).where(
                Fix.forge == "github",
                Fix.repository == event.repository,
                Fix.state == FixState.OPEN.value,
                Fix.number.is_not(None),
            )
        ).all()
        found = []
        for fix in fixes:
            contract = contract_of(fix.runs[0]) if fix.runs else None
            if fix.base_ref not in (None, event.base_ref) or contract is None:
                continue
            assert fix.number is not None
            keys = list(fix.violation_keys)
            found.append(_Candidate(fix.id, fix.repository, fix.number, contract, keys))
        return found


def supersede(
    settings: Settings,
    reading: Reading,
    forge: GitHubForge,
    event: PullRequestEvent,
) -> Writes | str:
    """Close each open fix of ours that the merged PR made unnecessary: the sweep and the close
    on GitHub happen here, with no write lock held; what records them, or why nothing will."""
    candidates = _candidates(reading, event)
    if not candidates:
        return "no open fix of ours to check"
    mirror = sync_mirror(settings, event.repository, forge.token())
    commit = event.merge_commit_sha or f"refs/heads/{event.base_ref}"
    done = []
    for fix in candidates:
        if remaining_violations(settings, mirror, commit, fix.contract, fix.violation_keys):
            continue
        # Once per fix PR: recorded before it is sent, found closed after a lost answer.
        forge.close_pull(fix.repository, fix.number, key=f"close:{fix.repository}:{fix.number}")
        done.append(fix)
    if not done:
        return "nothing superseded"

    def record(session: Session) -> str:
        for closed in done:
            row = session.get_one(Fix, closed.fix_id)
            forge.comment(
                session,
                row,
                f"Superseded by #{event.number} ({event.url}), which fixed the same violations "
                f"of the `{closed.contract.base}` contract. Closing this PR.",
                key=f"superseded:{row.id}:{event.number}",
            )
            row.state = FixState.SUPERSEDED.value
            row.state_reason = f"superseded by #{event.number} ({event.url})"
            row.closed_at = row.updated_at = utcnow()
            queue_refresh(session, row)
        return f"closed {', '.join(f'#{f.number}' for f in done)} as superseded"

    return record


def prepare_pull_request(
    settings: Settings,
    reading: Reading,
    forge: Callable[[], GitHubForge],
    event: PullRequestEvent,
) -> Writes | str:
    """Our PR → what tracks its state; someone else's merged PR → what supersedes the fixes it
    made unnecessary (GitHub and git are asked here, before any write lock is taken)."""
    with reading() as session:
        ours = our_fix(session, event)
        fix_id = ours.id if ours is not None else None
    if fix_id is not None:

        def track(session: Session) -> str:
            fix = session.get_one(Fix, fix_id)
            tracked = track_ours(session, settings, fix, event)
            landed = record_merge(session, fix, event)  # unchanged, or its edits read after
            return f"{tracked}; {landed}" if landed else tracked

        return track
    if event.action == "closed" and event.merged:
        return supersede(settings, reading, forge(), event)
    return f"{event.action} of a PR that is not ours: nothing to do"
