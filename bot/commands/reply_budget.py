"""How many command comments the bot answers on GitHub: per author, per PR, per repository, and
at most one an hour per PR for someone who is not a collaborator.

Every answer (a reply or a reaction) is a content-creating write under GitHub's per-minute cap,
and that cap is shared with what matters: fix PRs, statuses, reviews. 250 ``/repairbot help``
comments from a stranger used to get 249 replies. Now each command comment is still recorded
(``command_invocations``, with the reply the bot would have posted), but answered only within
these budgets, counted from the rows answered in the last hour; the rest say why on their row
(``withheld``) and are counted by ``/metrics``.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from bot.config import Settings
from bot.db.models import CommandInvocation, utcnow
from bot.forges.github.events import CommentEvent

# GitHub's author_association values of people with a standing in the repository.
COLLABORATORS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
HOUR = timedelta(hours=1)


def is_stranger(settings: Settings, event: CommentEvent) -> bool:
    """Whether the comment's author has no standing in the repository (for budgets only)."""
    listed = {user.lower() for user in settings.github_command_users}
    return event.association.upper() not in COLLABORATORS and event.login.lower() not in listed


def _answered(session: Session, *where: ColumnElement[bool]) -> int:
    since = utcnow() - HOUR
    found = session.scalar(
        select(func.count(CommandInvocation.id)).where(
            CommandInvocation.answered.is_(True), CommandInvocation.created_at >= since, *where
        )
    )
    return int(found or 0)


def withheld(session: Session, settings: Settings, event: CommentEvent) -> str | None:
    """Why this comment gets no answer on GitHub (a budget spent), or None: it gets one."""
    repository = CommandInvocation.repository == event.repository
    pull = CommandInvocation.pr_number == event.number
    author = CommandInvocation.author == event.login[:200]
    checks: list[tuple[int, str, tuple[ColumnElement[bool], ...]]] = [
        (settings.reply_budget_per_repository_hour, "in this repository", (repository,)),
        (settings.reply_budget_per_pr_hour, "on this PR", (repository, pull)),
        (settings.reply_budget_per_author_hour, f"to @{event.login}", (repository, author)),
    ]
    if is_stranger(settings, event):
        checks.insert(
            0,
            (
                settings.reply_budget_stranger_per_pr_hour,
                f"to @{event.login} (not a collaborator) on this PR",
                (repository, pull, author),
            ),
        )
    for budget, where, conditions in checks:
        if _answered(session, *conditions) >= budget:
            return f"reply budget spent: {budget} answer(s) per hour {where}"
    return None
