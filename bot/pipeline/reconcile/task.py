"""The reconciler: re-enqueue what a crash or a lost message left unfinished."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session

from bot.commands.any_pr.apply_fix import COMMAND as APPLY_FIX
from bot.commands.registry import QUEUED
from bot.config import Settings
from bot.db.crud import (
    move_run,
    stale_runs,
    unanswered_invocations,
    unclassified_reports,
    undispatched_deliveries,
    undispatched_delivery_ids,
)
from bot.db.models import RunState, utcnow
from bot.db.records.contract_checks import stale_queued_checks
from bot.db.session import read_scope, session_scope
from bot.db.tally_fold import fold_backlog
from bot.pipeline.fan_out.task import resend_pending
from bot.pipeline.github_send import resend_pending_writes
from bot.pipeline.reconcile.lost_runs import attempt_alive, lost_again, resent_reason
from bot.pipeline.task_base import RepairbotTask
from bot.queue import names as task_names
from bot.queue.celery_app import app
from bot.queue.depth import waiting_messages
from bot.queue.starts import (
    start_apply_fix,
    start_contract_check,
    start_process_delivery,
    start_repair,
    start_triage,
)
from bot.runner.requests import fall_back, rescue_stalled


def reconcile_once(settings: Settings) -> int:
    """Re-enqueue stale runs, unclassified reports, lost deliveries and queued commands' tasks;
    returns how many tasks were sent."""
    older_than = timedelta(seconds=settings.stale_after_s)
    url = settings.resolved_database_url
    sent = 0
    # The scan of every delivery, outside the writing transaction: on SQLite that one holds the
    # write lock, and the intake's writer would wait out the scan.
    # A delivery or check whose task waits behind a backlog is not lost: those are re-sent only
    # once the queue has drained (bot.queue.depth); None (unknown) keeps the old rule.
    backlog = waiting_messages(task_names.REPAIR_QUEUE)
    with read_scope(url) as reading:
        candidates = [] if backlog else undispatched_delivery_ids(reading, older_than=older_than)
    with session_scope(url) as session:
        for delivery in undispatched_deliveries(session, older_than=older_than, among=candidates):
            delivery.dispatched_at = utcnow()
            start_process_delivery(session, delivery.id)
            sent += 1
        for check in [] if backlog else stale_queued_checks(session, older_than=older_than):
            check.queued_at = utcnow()
            start_contract_check(session, check.repository, check.number)
            sent += 1
        for report in unclassified_reports(session, older_than=older_than):
            report.triage_sent_at = utcnow()  # not stale again until another stale_after_s passes
            start_triage(session, report.id)
            sent += 1
        for invocation in unanswered_invocations(
            session, command=APPLY_FIX.name, outcome=QUEUED, older_than=older_than
        ):
            if invocation.comment_id is None:
                continue  # every apply-fix is a comment's: without one there is none to answer
            invocation.sent_at = utcnow()  # the task answers once, however often it is sent
            start_apply_fix(session, invocation.id, invocation.comment_id)
            sent += 1
        sent += _resend_stale_runs(session, settings, older_than)
        sent += resend_pending(session, older_than=older_than)  # fan-out notices
        sent += resend_pending_writes(session, older_than=older_than)  # deferred GitHub writes
        sent += len(rescue_stalled(session, lost_after_s=settings.verify_lost_after_s))
        sent += len(
            fall_back(
                session,
                fallback_queues=settings.verify_fallback_queues,
                after_s=settings.verify_fallback_after_s,
                resend_after_s=settings.stale_after_s,
            )
        )
    fold_backlog(url)  # the dashboard's running totals: counted here, read by every page
    return sent


def _resend_stale_runs(session: Session, settings: Settings, older_than: timedelta) -> int:
    """Send again the repairs a crash left unfinished (or give up on them); how many sent."""
    sent = 0
    for run in stale_runs(session, older_than=older_than):
        lost = lost_again(run)
        if lost is not None and not attempt_alive(settings.worktrees_dir.resolve(), run.id):
            move_run(session, run=run, to=RunState.FAILED, reason=lost)
            continue
        if run.attempts >= settings.task_max_retries:
            move_run(
                session,
                run=run,
                to=RunState.ERROR,
                reason=f"gave up after {run.attempts} attempts",
            )
            continue
        move_run(
            session,
            run=run,
            to=RunState(run.state),
            reason=resent_reason(run.attempts, run.state),
        )
        run.updated_at = utcnow()  # not stale again until another stale_after_s passes
        start_repair(session, run.id)
        sent += 1
    return sent


@app.task(name=task_names.RECONCILE, base=RepairbotTask, bind=True)
def reconcile(self: RepairbotTask) -> int:
    """Celery entry point for the reconciler (run by beat, or by ``repairbot serve``'s timer)."""
    return reconcile_once(self.settings)
