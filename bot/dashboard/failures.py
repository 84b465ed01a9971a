"""``/failures``: every failure report received, unclassified ones included, for triage."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Text, cast, exists, func, or_, select
from sqlalchemy.orm import Session, selectinload

from bot.dashboard.filters import PAGE_SIZE, FailureFilters
from bot.db.models import CiFailure, RepairRun, RunState

UNCLASSIFIED = "unclassified"
TOP_LINE_CHARS = 300


@dataclass(frozen=True)
class FailureRow:
    """One report as the triage list shows it."""

    report: CiFailure
    top_error: str
    signatures: list[str]
    evidence: str

    @property
    def classified(self) -> bool:
        """Whether any finding matched a known signature."""
        return any(s != UNCLASSIFIED for s in self.signatures)


@dataclass(frozen=True)
class FailurePage:
    """One page of reports with totals."""

    rows: list[FailureRow]
    total: int
    page: int
    pages: int


def top_error(findings: list[Any]) -> str:
    """The first line of the first finding's message: what broke, in one line."""
    for finding in findings:
        if isinstance(finding, dict) and finding.get("message"):
            line = str(finding["message"]).strip().splitlines()[0]
            return line[:TOP_LINE_CHARS]
    return ""


def _conditions(filters: FailureFilters) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    recognised = exists().where(
        RepairRun.report_id == CiFailure.id, RepairRun.state != RunState.UNCLASSIFIED.value
    )
    if filters.kind == "classified":
        conditions.append(recognised)
    elif filters.kind == "unclassified":
        conditions.append(~recognised)
    if filters.q:
        conditions.append(
            or_(
                *(
                    column.icontains(filters.q, autoescape=True)
                    for column in (
                        CiFailure.pipeline,
                        CiFailure.repository,
                        CiFailure.stage,
                        cast(CiFailure.findings, Text),
                    )
                )
            )
        )
    return conditions


def list_failures(session: Session, *, filters: FailureFilters) -> FailurePage:
    """One page of reports, newest first."""
    conditions = _conditions(filters)
    total = session.scalar(select(func.count(CiFailure.id)).where(*conditions)) or 0
    pages = max(1, math.ceil(total / PAGE_SIZE))
    page = min(filters.page, pages)
    reports = session.scalars(
        select(CiFailure)
        .where(*conditions)
        .options(selectinload(CiFailure.runs))
        .order_by(CiFailure.id.desc())
        .limit(PAGE_SIZE)
        .offset((page - 1) * PAGE_SIZE)
    ).all()
    rows = []
    for report in reports:
        findings = [f for f in report.findings or [] if isinstance(f, dict)]
        signatures = list(dict.fromkeys(str(f.get("signature", "")) for f in findings))
        evidence = "\n\n".join(str(f.get("evidence") or "") for f in findings[:3]).strip()
        rows.append(FailureRow(report, top_error(findings), signatures, evidence))
    return FailurePage(rows=rows, total=total, page=page, pages=pages)
