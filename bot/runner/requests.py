"""Asking for a verification and calling one off (the worker side: ``bot.pipeline.verify.task``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.models import Fix, Verification, VerificationState, utcnow
from bot.db.rows import findings_of
from bot.queue.starts import start_verify
from fixers.repo.input_rules import safe_name_problem

ACTIVE = (VerificationState.QUEUED.value, VerificationState.RUNNING.value)


def queue_for(gpu_types: Sequence[str], default: str) -> str:
    """``gpu.<TYPE>`` for the first GPU type of the failure, else ``default``.

    A GPU type that is not a safe name (stored before intake checked them) is never made part
    of a queue name: it becomes a broker queue and a file name.
    """
    usable = [gpu for gpu in gpu_types if safe_name_problem(gpu) is None]
    return f"gpu.{usable[0]}" if usable else default


def failure_gpu_types(fix: Fix) -> list[str]:
    """The GPU types of the failures this fix answers, in the order CI reported them."""
    seen: list[str] = []
    for run in fix.runs:
        for finding in findings_of(run.report):
            for gpu in finding.gpu_types:
                if gpu not in seen:
                    seen.append(gpu)
    return seen


def request_verification(
    session: Session,
    *,
    fix: Fix,
    requested_by: str,
    default_queue: str,
    gpu_types: Sequence[str] | None = None,
    options: dict[str, Any] | None = None,
) -> Verification:
    """Record a queued verification of ``fix`` and send it to its GPU queue after commit.

    ``gpu_types`` None means the GPU types of the failures the fix answers; an empty list means
    no GPU (the default queue).
    """
    gpus = list(gpu_types) if gpu_types is not None else failure_gpu_types(fix)
    verification = Verification(
        fix_id=fix.id,
        requested_by=requested_by,
        options={**(options or {}), "gpu_types": gpus},
        requested_queue=queue_for(gpus, default_queue),
        state=VerificationState.QUEUED.value,
    )
    session.add(verification)
    session.flush()
    send_verification(session, verification, verification.requested_queue)
    return verification


def send_verification(
    session: Session, verification: Verification, queue: str, *, now: float | None = None
) -> None:
    """(Re)send a queued verification to ``queue``; the first worker to claim it runs it."""
    verification.queue = queue
    attempts = verification.options.get("queues_tried", [])
    verification.options = {
        **verification.options,
        "queues_tried": [*attempts, queue],
        "sent_at": time.time() if now is None else now,
    }
    start_verify(session, verification.id, queue=queue)


def fallback_chain(requested: str, fallback_queues: Sequence[str]) -> list[str]:
    """The queues a verification may go to, in order: never back up the chain.

    >>> fallback_chain("gpu.H100_PCIe", ["gpu.any", "cpu"])
    ['gpu.H100_PCIe', 'gpu.any', 'cpu']
    >>> fallback_chain("cpu", ["gpu.any", "cpu"])
    ['cpu']
    """
    if requested in fallback_queues:
        return list(fallback_queues[list(fallback_queues).index(requested) :])
    return [requested, *fallback_queues]


def fall_back(
    session: Session,
    *,
    fallback_queues: Sequence[str],
    after_s: float,
    resend_after_s: float,
    now: float | None = None,
) -> list[Verification]:
    """Verifications no worker claimed: after ``after_s`` to the next queue of their chain; at
    the end of the chain, re-sent there after ``resend_after_s`` (the message may be lost)."""
    moment = time.time() if now is None else now
    moved = []
    queued = session.scalars(
        select(Verification).where(Verification.state == VerificationState.QUEUED.value)
    ).all()
    for verification in queued:
        waited = moment - float(verification.options.get("sent_at", 0.0))
        tried = verification.options.get("queues_tried", [])
        chain = fallback_chain(verification.requested_queue, fallback_queues)
        following = [queue for queue in chain if queue not in tried]
        if following and waited >= after_s:
            send_verification(session, verification, following[0], now=moment)
        elif not following and waited >= resend_after_s:
            send_verification(session, verification, chain[-1], now=moment)
        else:
            continue
        moved.append(verification)
    return moved


def cancel_verifications(session: Session, *, fix_id: int, reason: str) -> list[Verification]:
    """Cancel every queued or running verification of a fix (a running one is killed by its
    worker, which watches for this state); returns the ones cancelled."""
    active = session.scalars(
        select(Verification).where(Verification.fix_id == fix_id, Verification.state.in_(ACTIVE))
    ).all()
    for verification in active:
        verification.state = VerificationState.CANCELLED.value
        verification.reason = reason
        verification.finished_at = utcnow()
    return list(active)


def latest_verification(session: Session, *, fix_id: int) -> Verification | None:
    """The newest verification of a fix, if any."""
    return session.scalar(
        select(Verification).where(Verification.fix_id == fix_id).order_by(Verification.id.desc())
    )


def rescue_stalled(
    session: Session, *, lost_after_s: float, max_attempts: int = 3, now: datetime | None = None
) -> list[Verification]:
    """Running verifications whose worker died — no heartbeat for ``lost_after_s`` (a row from
    before heartbeats counts from its start): queue again, or give up with the reason after
    ``max_attempts``."""
    cutoff = (now or utcnow()) - timedelta(seconds=lost_after_s)
    last_sign_of_life = func.coalesce(Verification.heartbeat_at, Verification.started_at)
    stalled = session.scalars(
        select(Verification).where(
            Verification.state == VerificationState.RUNNING.value, last_sign_of_life < cutoff
        )
    ).all()
    for verification in stalled:
        attempts = int(verification.options.get("attempts", 1))
        # The lost worker may only be slow: without its claim it can no longer report.
        verification.task_id = None
        if attempts >= max_attempts:
            verification.state = VerificationState.ERROR.value
            verification.reason = (
                f"no result after {attempts} attempts: the worker was lost each time "
                f"(no heartbeat for {lost_after_s:.0f} s)"
            )
            verification.finished_at = utcnow()
            continue
        verification.state = VerificationState.QUEUED.value
        verification.reason = (
            f"worker lost (no heartbeat for {lost_after_s:.0f} s): queued again, "
            f"attempt {attempts + 1} of {max_attempts}"
        )
        verification.options = {**verification.options, "attempts": attempts + 1}
        send_verification(session, verification, verification.requested_queue)
    return list(stalled)
