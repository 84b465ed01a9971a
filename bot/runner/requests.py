"""Asking for a verification and calling one off; the worker side lives in ``bot.tasks.verify``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.db.models import Fix, Verification, VerificationState, utcnow
from bot.tasks.enqueue import enqueue_after_commit

ACTIVE = (VerificationState.QUEUED.value, VerificationState.RUNNING.value)


def queue_for(gpu_types: Sequence[str], default: str) -> str:
    """``gpu.<TYPE>`` for the first GPU type of the failure, else ``default``."""
    return f"gpu.{gpu_types[0]}" if gpu_types else default


def failure_gpu_types(fix: Fix) -> list[str]:
    """The GPU types of the failures this fix answers, in the order CI reported them."""
    seen: list[str] = []
    for run in fix.runs:
        for finding in run.report.findings:
            for gpu in finding.get("gpu_types", []):
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
    """Record a queued verification of ``fix`` and send it to its GPU queue after commit."""
    gpus = list(gpu_types) if gpu_types else failure_gpu_types(fix)
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


def send_verification(session: Session, verification: Verification, queue: str) -> None:
    """(Re)send a queued verification to ``queue``; the first worker to claim it runs it."""
    verification.queue = queue
    attempts = verification.options.get("queues_tried", [])
    verification.options = {**verification.options, "queues_tried": [*attempts, queue]}
    enqueue_after_commit(session, "repairbot.verify", verification.id, queue=queue)


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
