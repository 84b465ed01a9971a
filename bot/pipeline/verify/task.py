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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.crud import move_run
from bot.db.models import RunState, Verification, VerificationState, utcnow
from bot.db.rows import findings_of
from bot.db.session import session_scope
from bot.forges.github.client import GitHubNotConfigured
from bot.forges.github.forge import GitHubForge
from bot.forges.github.mirror import is_github_repository, sync_mirror
from bot.forges.github.retry import RateLimited
from bot.forges.gitlab.events import project_path
from bot.forges.gitlab.forge import GitLabForge
from bot.forges.gitlab.remote import sync_mirror as sync_gitlab_mirror
from bot.forges.gitlab.rest import GitLabNotConfigured
from bot.forges.select import forge_for
from bot.git import GitError
from bot.pipeline.heartbeat import beating
from bot.pipeline.repair.plan import scoped_tests
from bot.pipeline.task_base import RepairbotTask
from bot.queue import names as task_names
from bot.queue.celery_app import app
from bot.queue.starts import start_announce_verification
from bot.runner.pr_summary import STATUS_CONTEXT, where_it_ran
from bot.runner.sandbox import sandbox_limits, sandbox_options
from bot.runner.verification import VerificationOutcome, VerificationPlan, discard, verify
from bot.runner.workdirs import leased
from fixers.sandbox import SandboxUnavailable

LOG_CHARS = 200_000
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claim:
    """This delivery of a verification: its queue, its claim token (the task id), its worker."""

    queue: str
    token: str
    worker: str


def _claim(settings: Settings, verification_id: int, claim: Claim) -> VerificationPlan | None:
    """Move a queued verification to running under ``claim``; None when another worker or a
    cancel got it first."""
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
                queue=claim.queue,
                task_id=claim.token,
            )
            .returning(Verification.id)
        )
        if claimed is None:
            return None
        verification = session.get_one(Verification, verification_id)
        # Who runs it, for operators (and for tests that kill exactly that process).
        runner = {"host": socket.gethostname(), "pid": os.getpid(), "worker": claim.worker}
        verification.options = {**verification.options, "runner": runner}
        _mark_verifying(session, settings, verification, claim.queue)
        return _plan(verification)


def _mark_verifying(
    session: Session, settings: Settings, verification: Verification, queue: str
) -> None:
    """The fix's runs move to verifying, and its PR shows a pending status."""
    fix = verification.fix
    for run in fix.runs:
        move_run(session, run=run, to=RunState.VERIFYING, reason=f"verification #{verification.id}")
    with contextlib.suppress(RateLimited):  # "pending" is a courtesy; the verdict is not
        forge_for(fix, settings).set_status(
            session,
            fix,
            state="pending",
            context=STATUS_CONTEXT,
            description=f"verifying on {queue}",
        )


def _plan(verification: Verification) -> VerificationPlan:
    """What to run: the fix against its base, with the tests its failures named."""
    fix = verification.fix
    findings = [f for run in fix.runs for f in findings_of(run.report)]
    addressed, others = scoped_tests(findings, (run.root_cause for run in fix.runs))
    return VerificationPlan(
        repo=Path(fix.repository),
        base_sha=fix.base_sha,
        head_sha=fix.head_sha,
        changed_files=list(fix.files),
        failed_tests=addressed,
        requested_queue=verification.requested_queue,
        other_tests=others,
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


@app.task(name=task_names.VERIFY, base=RepairbotTask, bind=True)
def verify_fix(self: RepairbotTask, verification_id: int) -> None:
    """Run verification ``verification_id`` on this worker (safe to deliver twice)."""
    request = self.request
    claim = Claim(
        queue=str((request.delivery_info or {}).get("routing_key") or "unknown"),
        token=str(request.id or uuid.uuid4()),
        worker=str(request.hostname or ""),
    )
    run_verification(self.settings, verification_id, claim)


def run_verification(settings: Settings, verification_id: int, claim: Claim) -> None:
    """The verification stage: claim the row, then verify while the heartbeat says it is ours."""
    plan = _claim(settings, verification_id, claim)
    if plan is None:
        return
    with beating(
        lambda: _beat(settings, verification_id, claim.token),
        interval_s=settings.verify_heartbeat_s,
        name=f"heartbeat-verification-{verification_id}",
    ) as heartbeat:
        _run_claimed(settings, verification_id, plan, claim, heartbeat.lost.is_set)


def _run_claimed(
    settings: Settings,
    verification_id: int,
    plan: VerificationPlan,
    claim: Claim,
    lost: Callable[[], bool],
) -> None:
    """Fetch (GitHub), verify in a leased run dir, and record the outcome while it is ours."""
    finish = functools.partial(_finish, settings, verification_id, claim=claim.token)
    fetched = _fetched(settings, plan)
    if isinstance(fetched, str):
        finish(state=VerificationState.ERROR, reason=fetched)
        return
    should_cancel = _canceller(settings, verification_id, lost)
    ran = _verify_in_run_dir(settings, verification_id, fetched, should_cancel, finish)
    if isinstance(ran, str):
        finish(state=VerificationState.ERROR, reason=ran)
        return
    outcome, log = ran
    state, reason = _conclusion(plan, outcome)
    finish(
        state=state,
        verdict=outcome.verdict,
        reason=reason,
        device=outcome.device,
        host=outcome.host,
        on_requested=outcome.on_requested_device,
        results={**outcome.results(), "head_sha": plan.head_sha, "worker": claim.worker},
        log=log[-LOG_CHARS:],
    )


def _fetched(settings: Settings, plan: VerificationPlan) -> VerificationPlan | str:
    """The plan with a local repository: a GitHub or GitLab fix is fetched into its mirror
    first (a GPU host has no checkout of its own); the reason when it cannot be."""
    name = str(plan.repo)
    try:
        if settings.forge == "gitlab" and project_path(name) is not None:
            mirror = sync_gitlab_mirror(settings, name, GitLabForge(settings).token())
        elif is_github_repository(name):
            mirror = sync_mirror(settings, name, GitHubForge(settings).token())
        else:
            return plan
    except (GitError, GitHubNotConfigured, GitLabNotConfigured, RateLimited) as exc:
        return f"cannot fetch {plan.repo}: {exc}"
    return dataclasses.replace(plan, repo=mirror)


def _canceller(
    settings: Settings, verification_id: int, lost: Callable[[], bool]
) -> Callable[[], bool]:
    """Whether to stop now: lost (re-queued, maybe claimed elsewhere: at once) or cancelled (the
    database is asked at most once a second)."""
    last_check = [0.0]

    def should_cancel() -> bool:
        if lost():
            return True
        if time.monotonic() - last_check[0] < 1.0:
            return False
        last_check[0] = time.monotonic()
        return _cancelled(settings, verification_id)

    return should_cancel


def _verify_in_run_dir(
    settings: Settings,
    verification_id: int,
    plan: VerificationPlan,
    should_cancel: Callable[[], bool],
    finish: Callable[..., None],
) -> tuple[VerificationOutcome, str] | str:
    """Verify in a run dir of its own, leased: the outcome and its log, or why it refused (a
    runner failure is finished as an error, then raised)."""
    # Unique per attempt, and leased: a prune at any worker's start removes it only once the
    # process running it is gone.
    run_dir = settings.runner_root / f"verification-{verification_id}-{uuid.uuid4().hex[:8]}"
    with leased(run_dir):
        try:
            outcome = verify(
                plan,
                run_dir=run_dir,
                limits=sandbox_limits(settings, settings.verify_timeout_s),
                reruns=settings.verify_reruns,
                should_cancel=should_cancel,
                sandbox=sandbox_options(settings),
                environments=settings.environments_dir,
                images=settings.verify_images_dir,
            )
            log = (run_dir / "verification.log").read_text(encoding="utf-8", errors="replace")
        except SandboxUnavailable as exc:  # refused, not failed: retrying cannot help
            return str(exc)
        except Exception as exc:  # any runner failure ends the verification with its reason
            finish(state=VerificationState.ERROR, reason=f"runner error: {exc}")
            raise
        finally:
            discard(run_dir)
    return outcome, log


def _conclusion(
    plan: VerificationPlan, outcome: VerificationOutcome
) -> tuple[VerificationState, str]:
    """The verification's final state and reason."""
    if outcome.cancelled:
        return VerificationState.CANCELLED, "cancelled: the test process group was killed"
    if outcome.limit is not None:  # the timeout among them
        return VerificationState.ERROR, outcome.limit_reason()
    if outcome.verdict is None:
        return VerificationState.ERROR, "; ".join(outcome.problems) or "no verdict"
    return (
        VerificationState.DONE,
        where_it_ran(outcome.device, plan.requested_queue, outcome.on_requested_device),
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
        start_announce_verification(session, verification.id)
