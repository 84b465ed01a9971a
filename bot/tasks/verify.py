"""Stage 3: verify a fix on the requested GPU queue, before and after, and report the verdict."""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import time
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
from bot.runner.sandbox import Limits
from bot.runner.verification import VerificationPlan, discard, verify
from bot.tasks.base import RepairbotTask
from bot.tasks.celery_app import app
from bot.tasks.enqueue import enqueue_after_commit

LOG_CHARS = 200_000


def _claim(settings: Settings, verification_id: int, queue: str) -> VerificationPlan | None:
    """Move a queued verification to running; None when another worker or a cancel got it first."""
    with session_scope(settings.resolved_database_url) as session:
        claimed = session.scalar(
            update(Verification)
            .where(
                Verification.id == verification_id,
                Verification.state == VerificationState.QUEUED.value,
            )
            .values(state=VerificationState.RUNNING.value, started_at=utcnow(), queue=queue)
            .returning(Verification.id)
        )
        if claimed is None:
            return None
        verification = session.get_one(Verification, verification_id)
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


@app.task(name="repairbot.verify", base=RepairbotTask, bind=True)
def verify_fix(self: RepairbotTask, verification_id: int) -> None:
    """Run verification ``verification_id`` on this worker (safe to deliver twice)."""
    settings = self.settings
    queue = str((self.request.delivery_info or {}).get("routing_key") or "unknown")
    plan = _claim(settings, verification_id, queue)
    if plan is None:
        return
    if is_github_repository(str(plan.repo)):
        try:  # a GPU host has no checkout of its own: fetch the fix branch into a mirror
            mirror = sync_mirror(settings, str(plan.repo), GitHubForge(settings).token())
        except (GitError, GitHubNotConfigured, RateLimited) as exc:
            _finish(
                settings,
                verification_id,
                state=VerificationState.ERROR,
                verdict=None,
                reason=f"cannot fetch {plan.repo}: {exc}",
                device="unknown",
                host="",
                on_requested=False,
                results={},
                log="",
            )
            return
        plan = dataclasses.replace(plan, repo=mirror)
    root = settings.runner_dir or Path(tempfile.gettempdir()) / "repairbot-runs"
    run_dir = root / f"verification-{verification_id}-{int(time.time())}"
    last_check = [0.0]

    def should_cancel() -> bool:
        if time.monotonic() - last_check[0] < 1.0:
            return False
        last_check[0] = time.monotonic()
        return _cancelled(settings, verification_id)

    try:
        outcome = verify(
            plan,
            run_dir=run_dir,
            limits=Limits(timeout_s=settings.verify_timeout_s),
            reruns=settings.verify_reruns,
            should_cancel=should_cancel,
        )
        log = (run_dir / "verification.log").read_text(encoding="utf-8", errors="replace")
    except Exception as exc:  # any runner failure ends the verification with its reason
        _finish(
            settings,
            verification_id,
            state=VerificationState.ERROR,
            verdict=None,
            reason=f"runner error: {exc}",
            device="unknown",
            host="",
            on_requested=False,
            results={},
            log="",
        )
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
    _finish(
        settings,
        verification_id,
        state=state,
        verdict=outcome.verdict,
        reason=reason,
        device=outcome.device,
        host=outcome.host,
        on_requested=outcome.on_requested_device,
        results={**outcome.results(), "head_sha": plan.head_sha, "worker": self.request.hostname},
        log=log[-LOG_CHARS:],
    )


def _finish(
    settings: Settings,
    verification_id: int,
    *,
    state: VerificationState,
    verdict: str | None,
    reason: str,
    device: str,
    host: str,
    on_requested: bool,
    results: dict[str, Any],
    log: str,
) -> None:
    with session_scope(settings.resolved_database_url) as session:
        verification = session.get_one(Verification, verification_id)
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
