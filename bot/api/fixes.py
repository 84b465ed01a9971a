"""Read API: failures received, reports and their runs, fix PRs."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, status
from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from bot.db.models import CiFailure, Fix, FixState, RepairRun, Verification
from bot.db.request_scope import get_read_session
from fixers.repo.input_rules import MAX_SQL_INT

router = APIRouter(prefix="/api/v1")
SessionDep = Annotated[Session, Depends(get_read_session)]


def _run_json(run: RepairRun) -> dict[str, Any]:
    return {
        "id": run.id,
        "root_cause": run.root_cause,
        "signature": run.signature,
        "state": run.state,
        "reason": run.reason,
        "attempts": run.attempts,
        "fix_id": run.fix_id,
        "updated_at": run.updated_at.isoformat(),
        "transitions": [
            {"from": t.from_state, "to": t.to_state, "reason": t.reason, "at": t.at.isoformat()}
            for t in run.transitions
        ],
    }


def _report_json(report: CiFailure, *, detail: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": report.id,
        "pipeline": report.pipeline,
        "build_number": report.build_number,
        "build_url": report.build_url,
        "repository": report.repository,
        "pr_number": report.pr_number,
        "head_sha": report.head_sha,
        "format": report.format,
        # Console text is only screened at intake: its failures are counted at triage.
        "failure_count": (
            report.failure_count
            if report.classified_at is not None or report.format != "console"
            else None
        ),
        "received_at": report.received_at.isoformat(),
        "classified_at": report.classified_at.isoformat() if report.classified_at else None,
        "top_errors": [f.get("message", "") for f in report.findings[:5]],
        "signatures": sorted({f.get("signature", "") for f in report.findings}),
        "runs": [_run_json(run) for run in report.runs],
    }
    if detail:
        data["findings"] = report.findings
    return data


def _verification_json(verification: Verification, *, detail: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": verification.id,
        "state": verification.state,
        "verdict": verification.verdict,
        "requested_by": verification.requested_by,
        "requested_queue": verification.requested_queue,
        "queue": verification.queue,
        "host": verification.host,
        "device": verification.device,
        "on_requested_device": verification.on_requested_device,
        "reason": verification.reason,
        "created_at": verification.created_at.isoformat(),
        "finished_at": verification.finished_at.isoformat() if verification.finished_at else None,
    }
    if detail:
        data.update(results=verification.results, log=verification.log)
    return data


def _fix_json(fix: Fix, *, detail: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": fix.id,
        "forge": fix.forge,
        "repository": fix.repository,
        "number": fix.number,
        "url": fix.url,
        "title": fix.title,
        "signature": fix.signature,
        "state": fix.state,
        "branch": fix.branch,
        "base_ref": fix.base_ref,
        "base_sha": fix.base_sha,
        "head_sha": fix.head_sha,
        "files": fix.files,
        "violations": fix.violations,
        "created_at": fix.created_at.isoformat(),
        "runs": [run.id for run in fix.runs],
        "verifications": [_verification_json(v, detail=detail) for v in fix.verifications],
    }
    if detail:
        data.update(
            body=fix.body,
            diff=fix.diff,
            comments=[
                {
                    "kind": c.kind,
                    "author": c.author,
                    "body": c.body,
                    "context": c.context,
                    "state": c.state,
                    "created_at": c.created_at.isoformat(),
                }
                for c in fix.comments
            ],
        )
    return data


@router.get("/failures")
def list_failures(
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_SQL_INT)] = 0,
) -> list[dict[str, Any]]:
    """Every failure report received, newest first, unclassified ones included."""
    reports = session.scalars(
        select(CiFailure)
        .options(selectinload(CiFailure.runs).selectinload(RepairRun.transitions))
        .order_by(CiFailure.id.desc())
        .limit(limit)
        .offset(offset)
    ).all()
    return [_report_json(report, detail=False) for report in reports]


@router.get("/reports/{report_id}")
def get_report(report_id: int, session: SessionDep) -> dict[str, Any]:
    """One report with its findings and the state of each repair run."""
    # An id no column can hold names no report: 404, before the driver overflows on it.
    report = session.get(CiFailure, report_id) if 1 <= report_id <= MAX_SQL_INT else None
    if report is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no report {report_id}")
    return _report_json(report, detail=True)


@router.get("/fixes")
def list_fixes(
    session: SessionDep,
    state: FixState | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_SQL_INT)] = 0,
) -> list[dict[str, Any]]:
    """Every fix PR, newest first; ``state`` filters (open, merged, closed, superseded)."""
    query = (
        select(Fix)
        .options(selectinload(Fix.runs), selectinload(Fix.verifications))
        .order_by(Fix.id.desc())
    )
    if state is not None:
        query = query.where(Fix.state == state.value)
    return [
        _fix_json(fix, detail=False) for fix in session.scalars(query.limit(limit).offset(offset))
    ]


@router.get("/fixes/{fix_id}")
def get_fix(fix_id: int, session: SessionDep) -> dict[str, Any]:
    """One fix PR with its body and diff."""
    fix = session.get(Fix, fix_id) if 1 <= fix_id <= MAX_SQL_INT else None
    if fix is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no fix {fix_id}")
    return _fix_json(fix, detail=True)
