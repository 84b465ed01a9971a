"""A failure at an untrusted commit (``bot.pipeline.repair.target``): reviewed, never pushed.

When the failing commit is a fork's or a PR branch's and the base branch does not have the
violation, the violation is the PR's own. On GitHub, with the PR known (the report's, or found
among the mirror's ``refs/pull/N/head``), the pre-merge contract check reviews that PR: it merges
the head onto the base, sweeps with the base's configuration and posts the fixes as
suggestions. Otherwise the repair computes the fix in a worktree of the untrusted commit, with
the base's configuration pinned over the commit's own (``pin_config``), and records it as a
suggestion on the run (or posts it on the PR when contract checks are off).
"""

from __future__ import annotations

from bot.config import Settings
from bot.db.crud import move_run
from bot.db.models import RepairRun, RunState
from bot.db.session import session_scope
from bot.forges.github.api import GitHubApi
from bot.pipeline.contract_check.triggers import queue_pull_check
from bot.pipeline.repair.target import Target


def reviewed_instead(settings: Settings, run_id: int, target: Target) -> bool:
    """End run ``run_id`` as ``suggested`` with the contract check of its PR queued, when its
    target is untrusted, on GitHub, with a known PR (False: the repair goes on)."""
    untrusted = target.untrusted
    if untrusted is None or untrusted.pr_number is None or not settings.contract_check:
        return False
    if not isinstance(target.forge, GitHubApi):
        return False
    number = untrusted.pr_number
    reason = (
        f"{untrusted.reason}; the pre-merge contract check reviews {target.name}#{number} "
        "with the fix as suggestions, and no fix PR is opened"
    )
    with session_scope(settings.resolved_database_url) as session:
        move_run(
            session, run=session.get_one(RepairRun, run_id), to=RunState.SUGGESTED, reason=reason
        )
        queue_pull_check(session, target.name, number)
    return True
