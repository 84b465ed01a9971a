"""The loop guard for events: what a bot caused is acted on only within a budget per PR per hour.

Two kinds of event reach here:

- **A CI failure** whose failing commit the bot itself pushed (the report names our fix PR, or
  its head is one of our fixes' heads) or another bot did (the commit's author or committer is
  a ``[bot]`` account, ``bot.forges.branch_guard.bot_of``). Our own pushes are known from our
  fix rows, not from the git identity we commit with: a repository may be built by tools
  sharing it (the demo target is), and a human's failing commit must never be budgeted.
- **A pull_request event** (``opened``/``synchronize``/...) on a human's PR whose sender is a
  bot: a push the bot (``/repairbot apply-fix``) or another bot made onto it. Events on PRs a
  bot opened never get here: the contract check skips them.

Each is recorded in ``bot_events`` (``bot.db.records.bot_events``): within the budget the bot acts,
past it the run ends ``loop_guarded`` (or the delivery says why nothing was done) with the reason.
Human-caused events are never counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import CiFailure, Fix, RepairRun, RunState
from bot.db.records.bot_events import EventOutcome, event_key, take_budget
from bot.db.session import session_scope
from bot.forges.branch_guard import CommitBy, last_commits
from bot.forges.github.events import PullRequestEvent, is_bot_account
from bot.git import GitError
from bot.pipeline.repair.run_state import Stop
from bot.pipeline.repair.target import Target

CI_FAILURE = "ci_failure"
PULL_REQUEST = "pull_request"


@dataclass(frozen=True)
class Cause:
    """Which bot caused an event, and the PR whose budget it counts against (None: no PR)."""

    by: str
    pr_number: int | None
    fix_id: int | None = None  # our fix behind it: a guarded run is shown on its page


def our_fix_behind(
    session: Session, *, repository: str, pr_number: int | None, sha: str
) -> Fix | None:
    """Our fix whose PR is ``pr_number`` or whose head is ``sha`` in ``repository``, if any."""
    which = Fix.head_sha == sha
    if pr_number is not None:
        which = or_(which, Fix.number == pr_number)
    return session.scalar(
        select(Fix).where(Fix.repository == repository, which).order_by(Fix.id.desc()).limit(1)
    )


def other_bot(settings: Settings, commit: CommitBy) -> str | None:
    """The bot (not us: see the module docstring) that authored or committed ``commit``."""
    for name, email in (
        (commit.author, commit.author_email),
        (commit.committer, commit.committer_email),
    ):
        if is_bot_account(settings, name) or "[bot]@" in email.lower():
            return name
    return None


def ci_cause(
    session: Session, settings: Settings, report: CiFailure, target: Target, failing: CommitBy
) -> Cause | None:
    """Which bot caused the failure of ``report`` at ``failing`` (its commit), or None."""
    fix = our_fix_behind(
        session, repository=target.name, pr_number=report.pr_number, sha=failing.sha
    )
    if fix is not None:
        pushed = f"its fix #{fix.id}" + (f", PR #{fix.number}" if fix.number else "")
        by = f"{settings.github_bot_login} ({pushed})"
        return Cause(by, fix.number or report.pr_number, fix.id)
    bot = other_bot(settings, failing)
    return Cause(bot, report.pr_number) if bot is not None else None


def failing_commit(target: Target, head_sha: str | None) -> CommitBy:
    """Who made the report's failing commit: its head, else the commit the target repairs (the
    two differ when a PR's failure is repaired on its base: ``Target.notice_pr``)."""
    if head_sha:
        try:
            return last_commits(target.repo, head_sha, 1)[0]
        except GitError:
            pass  # not fetched (or not a commit here): the target's commit is what we have
    return last_commits(target.repo, target.base_sha, 1)[0]


def guard_report(settings: Settings, run_id: int, target: Target) -> Stop | None:
    """The end of run ``run_id`` when its failure is bot-caused and its PR's budget for this
    hour is spent; None when the run may go on (human-caused, or within the budget).

    Counted once per report (its runs share the decision); a rerun finds its first answer.
    """
    url, budget = settings.resolved_database_url, settings.bot_event_budget_per_pr_hour
    with session_scope(url) as session:
        head_sha = session.get_one(RepairRun, run_id).report.head_sha
    failing = failing_commit(target, head_sha)  # git outside the transaction
    with session_scope(url) as session:
        report = session.get_one(RepairRun, run_id).report
        cause = ci_cause(session, settings, report, target, failing)
        if cause is None:
            return None
        row = take_budget(
            session,
            repository=target.name,
            pr_number=cause.pr_number,
            kind=CI_FAILURE,
            key=f"report:{report.id}",
            caused_by=cause.by,
            budget=budget,
        )
        if row.outcome == EventOutcome.ACTED.value:
            return None
        if cause.fix_id is not None:
            session.get_one(RepairRun, run_id).fix_id = cause.fix_id
        return Stop(RunState.LOOP_GUARDED, f"{row.describe(budget)} (head {failing.sha[:12]})")


def guard_pull_request(session: Session, settings: Settings, event: PullRequestEvent) -> str | None:
    """Why a pull_request event a bot sent is not acted on (its PR's budget is spent), else
    None: a human's event, or a bot's within the budget (recorded in ``session``)."""
    if not is_bot_account(settings, event.sender):
        return None
    budget = settings.bot_event_budget_per_pr_hour
    row = take_budget(
        session,
        repository=event.repository,
        pr_number=event.number,
        kind=PULL_REQUEST,
        key=event_key(f"{event.repository}#{event.number}:{event.action}:{event.head_sha}"),
        caused_by=event.sender,
        budget=budget,
    )
    return None if row.outcome == EventOutcome.ACTED.value else row.describe(budget)
