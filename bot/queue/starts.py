"""How a stage starts another: one typed function per task, sent once the session commits.

A stage never names another stage's task by string, and never imports it (that would point up
the layers): it calls ``start_<task>(session, ...)`` with the task's own arguments, which mypy
checks. ``STARTS`` maps each task name to its start; a test keeps every start's parameters equal
to its task's, so a task whose signature changes fails there, not at run time on a worker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from bot.queue import names
from bot.queue.enqueue import enqueue_after_commit


def start_process_delivery(session: Session, delivery_id: int) -> None:
    """Handle a stored GitHub delivery."""
    enqueue_after_commit(session, names.PROCESS_DELIVERY, delivery_id)


def start_triage(session: Session, report_id: int) -> None:
    """Classify a stored CI report into repair runs."""
    enqueue_after_commit(session, names.TRIAGE, report_id)


def start_repair(session: Session, run_id: int) -> None:
    """Sweep, fix and publish one repair run."""
    enqueue_after_commit(session, names.REPAIR, run_id)


def start_verify(session: Session, verification_id: int, *, queue: str) -> None:
    """Verify a fix on the runner queue of its GPU type."""
    enqueue_after_commit(session, names.VERIFY, verification_id, queue=queue)


def start_announce_verification(session: Session, verification_id: int) -> None:
    """Tell the PR what a verification found."""
    enqueue_after_commit(session, names.ANNOUNCE_VERIFICATION, verification_id)


def start_contract_check(
    session: Session, repository: str, number: int, *, countdown: float | None = None
) -> None:
    """Check the contracts of PR ``number`` (``countdown``: no sooner than that, in seconds)."""
    enqueue_after_commit(session, names.CONTRACT_CHECK, repository, number, countdown=countdown)


def start_contract_recheck(
    session: Session, repository: str, branch: str, before: str, after: str
) -> None:
    """Compare a push's contracts and re-check the open PRs into its branch."""
    enqueue_after_commit(session, names.CONTRACT_RECHECK, repository, branch, before, after)


def start_apply_fix(session: Session, invocation_id: int, comment_id: int) -> None:
    """Do the work of one ``/repairbot apply-fix`` invocation."""
    enqueue_after_commit(session, names.APPLY_FIX, invocation_id, comment_id)


def start_pr_notice(session: Session, notice_id: int) -> None:
    """Post or update one fan-out notice."""
    enqueue_after_commit(session, names.PR_NOTICE, notice_id)


def start_pr_notices_refresh(session: Session, fix_id: int) -> None:
    """Update every notice of a fix that changed."""
    enqueue_after_commit(session, names.PR_NOTICES_REFRESH, fix_id)


def start_merge_outcome(session: Session, fix_id: int) -> None:
    """Read how our merged fix landed."""
    enqueue_after_commit(session, names.MERGE_OUTCOME, fix_id)


def start_send_github_write(session: Session, write_id: int) -> None:
    """Send one deferred GitHub write."""
    enqueue_after_commit(session, names.SEND_GITHUB_WRITE, write_id)


def start_buildkite_rebuild(
    session: Session, invocation_id: int, organization: str, pipeline: str, number: int
) -> None:
    """Ask Buildkite to rebuild a fix PR's build, for one ``/bot run``."""
    enqueue_after_commit(
        session, names.BUILDKITE_REBUILD, invocation_id, organization, pipeline, number
    )


STARTS: dict[str, Callable[..., Any]] = {
    names.PROCESS_DELIVERY: start_process_delivery,
    names.TRIAGE: start_triage,
    names.REPAIR: start_repair,
    names.VERIFY: start_verify,
    names.ANNOUNCE_VERIFICATION: start_announce_verification,
    names.CONTRACT_CHECK: start_contract_check,
    names.CONTRACT_RECHECK: start_contract_recheck,
    names.APPLY_FIX: start_apply_fix,
    names.PR_NOTICE: start_pr_notice,
    names.PR_NOTICES_REFRESH: start_pr_notices_refresh,
    names.MERGE_OUTCOME: start_merge_outcome,
    names.SEND_GITHUB_WRITE: start_send_github_write,
    names.BUILDKITE_REBUILD: start_buildkite_rebuild,
}
