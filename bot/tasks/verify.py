"""Stage 3: verify a fix on the requested GPU queue, before and after, and report the verdict."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import update

from bot.config import Settings
from bot.db.crud import move_run
from bot.db.models import RunState, Verification, VerificationState, utcnow
from bot.db.session import session_scope
from bot.forge.base import forge_for
from bot.forge.git import GitError
from bot.forge.github import GitHubForge
from bot.github.client import GitHubNotConfigured
from bot.github.mirror import is_github_repository, sync_mirror
from bot.github.retry import RateLimited
from bot.runner.report import STATUS_CONTEXT, where_it_ran
from bot.runner.sandbox import sandbox_options
from bot.runner.verification import VerificationPlan, discard, verify
from bot.runner.workdirs import leased
from bot.tasks.base import RepairbotTask
from bot.tasks.celery_app import app
from bot.tasks.enqueue import enqueue_after_commit
from bot.tasks.heartbeat import beating
from fixers.sandbox import Limits, SandboxUnavailable

LOG_CHARS = 200_000
logger = logging.getLogger(__name__)


def _claim(
    settings: Settings, verification_id: int, queue: str, claim: str, worker: str
) -> VerificationPlan | None:
    """Move a queued verification to running under ``claim`` (this delivery's task id); None
    when another worker or a cancel got it first."""
    now = utcnow()
    with session_scope(settings.resolved_database_url) as session:
        claimed = session.scalar(
            update(Verification)
            .where(
                Verification.id == verification_id,
                Verification.state == VerificationState.QUEUED.value,
            )
            .values(
                state=VerificationState.RUNNING.value,
                started_at=now,
                heartbeat_at=now,
                queue=queue,
                task_id=claim,
            )
            .returning(Verification.id)
        )
        if claimed is None:
            return None
        verification = session.get_one(Verification, verification_id)
        # Who runs it, for operators (and for tests that kill exactly that process).
        verification.options = {
            **verification.options,
            "runner": {"host": socket.gethostname(), "pid": os.getpid(), "worker": worker},
        }
        fix = verification.fix
        for run in fix.runs:
            move_run(
                session, run=run, to=RunState.VERIFYING, reason=f"verification #{verification.id}"
            )
        with contextlib.suppress(RateLimited):  # "pending" is a courtesy; the verdict is not
            forge_for(fix, settings).set_status(
                session,
                fix,
                state="pending",
                context=STATUS_CONTEXT,
                description=f"verifying on {queue}",
            )
        failed = sorted(
            {
                t
                for run in fix.runs
                for f in run.report.findings
                if f.get("fixer")
                for t in f.get("tests", [])
            }
        )
        return VerificationPlan(
            repo=Path(fix.repository),
            base_sha=fix.base_sha,
            head_sha=fix.head_sha,
            changed_files=list(fix.files),
            failed_tests=failed,
            requested_queue=verification.requested_queue,
        )


def _cancelled(settings: Settings, verification_id: int) -> bool:
    with session_scope(settings.resolved_database_url) as session:
        state = session.get_one(Verification, verification_id).state
    return state == VerificationState.CANCELLED.value


def _beat(settings: Settings, verification_id: int, claim: str) -> bool:
    """Refresh the heartbeat while the row is still running under our claim; False when it is
    not (cancelled, or re-queued because we looked dead and claimed by another worker)."""
    with session_scope(settings.resolved_database_url) as session:
        result = session.execute(
            update(Verification)
            .where(
                Verification.id == verification_id,
                Verification.state == VerificationState.RUNNING.value,
                Verification.task_id == claim,
            )
            .values(heartbeat_at=utcnow())
        )
        return bool(getattr(result, "rowcount", 0) == 1)


@app.task(name="repairbot.verify", base=RepairbotTask, bind=True)
def verify_fix(self: RepairbotTask, verification_id: int) -> None:
    """Run verification ``verification_id`` on this worker (safe to deliver twice)."""
    settings = self.settings
    queue = str((self.request.delivery_info or {}).get("routing_key") or "unknown")
    claim = str(self.request.id or uuid.uuid4())
    worker = str(self.request.hostname or "")
    plan = _claim(settings, verification_id, queue, claim, worker)
    if plan is None:
        return
    with beating(
        lambda: _beat(settings, verification_id, claim),
        interval_s=settings.verify_heartbeat_s,
        name=f"heartbeat-verification-{verification_id}",
    ) as heartbeat:
        _run_claimed(settings, verification_id, plan, claim, worker, heartbeat.lost.is_set)


def _run_claimed(
    settings: Settings,
    verification_id: int,
    plan: VerificationPlan,
    claim: str,
    worker: str,
    lost: Callable[[], bool],
) -> None:
    """Fetch (GitHub), verify in a leased run dir, and record the outcome while it is ours."""
    finish = functools.partial(_finish, settings, verification_id, claim=claim)
    if is_github_repository(str(plan.repo)):
        try:  # a GPU host has no checkout of its own: fetch the fix branch into a mirror
            mirror = sync_mirror(settings, str(plan.repo), GitHubForge(settings).token())
        except (GitError, GitHubNotConfigured, RateLimited) as exc:
            finish(state=VerificationState.ERROR, reason=f"cannot fetch {plan.repo}: {exc}")
            return
        plan = dataclasses.replace(plan, repo=mirror)
    # Unique per attempt, and leased: a prune at any worker's start removes it only once the
    # process running it is gone.
    run_dir = settings.runner_root / f"verification-{verification_id}-{uuid.uuid4().hex[:8]}"
    last_check = [0.0]

    def should_cancel() -> bool:
        if lost():  # re-queued as lost and maybe claimed elsewhere: stop at once
            return True
        if time.monotonic() - last_check[0] < 1.0:
            return False
        last_check[0] = time.monotonic()
        return _cancelled(settings, verification_id)

    with leased(run_dir):
        try:
            outcome = verify(
                plan,
                run_dir=run_dir,
                limits=Limits(timeout_s=settings.verify_timeout_s),
                reruns=settings.verify_reruns,
                should_cancel=should_cancel,
                sandbox=sandbox_options(settings),
            )
            log = (run_dir / "verification.log").read_text(encoding="utf-8", errors="replace")
        except SandboxUnavailable as exc:  # refused, not failed: retrying cannot help
            finish(state=VerificationState.ERROR, reason=str(exc))
            return
        except Exception as exc:  # any runner failure ends the verification with its reason
            finish(state=VerificationState.ERROR, reason=f"runner error: {exc}")
            raise
        finally:
            discard(run_dir)
    if outcome.cancelled:
        state, reason = VerificationState.CANCELLED, "cancelled: the test process group was killed"
    elif outcome.timed_out:
        state, reason = (
            VerificationState.ERROR,
            f"timed out after {settings.verify_timeout_s:.0f} s",
        )
    elif outcome.verdict is None:
        state, reason = VerificationState.ERROR, "; ".join(outcome.problems) or "no verdict"
    else:
        state = VerificationState.DONE
        reason = where_it_ran(outcome.device, plan.requested_queue, outcome.on_requested_device)
    finish(
        state=state,
        verdict=outcome.verdict,
        reason=reason,
        device=outcome.device,
        host=outcome.host,
        on_requested=outcome.on_requested_device,
        results={**outcome.results(), "head_sha": plan.head_sha, "worker": worker},
        log=log[-LOG_CHARS:],
    )


def _finish(
    settings: Settings,
    verification_id: int,
    *,
    claim: str,
    state: VerificationState,
    verdict: str | None = None,
    reason: str,
    device: str = "unknown",
    host: str = "",
    on_requested: bool = False,
    results: dict[str, Any] | None = None,
    log: str = "",
) -> None:
    results = results or {}
    with session_scope(settings.resolved_database_url) as session:
        verification = session.get_one(Verification, verification_id, with_for_update=True)
        if verification.task_id != claim:
            # We were taken for dead and the verification was queued again: its new run reports.
            logger.warning("verification %s: no longer ours, result dropped", verification_id)
            return
        if (
            verification.state == VerificationState.CANCELLED.value
            and state != VerificationState.CANCELLED
        ):
            state = VerificationState.CANCELLED
        verification.state, verification.verdict, verification.reason = state.value, verdict, reason
        verification.device, verification.host, verification.on_requested_device = (
            device,
            host,
            on_requested,
        )
        verification.results, verification.log, verification.finished_at = results, log, utcnow()
        verification.tests = [t["test_id"] for t in results.get("tests", [])]
        passed = verification.verdict in ("fixed", "not_reproduced")
        said = verification.verdict or verification.state
        for run in verification.fix.runs:
            move_run(
                session,
                run=run,
                to=RunState.VERIFIED if passed else RunState.FAILED,
                reason=f"verification #{verification.id}: {said}",
            )
        enqueue_after_commit(session, "repairbot.report_verification", verification.id)
