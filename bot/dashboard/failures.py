"""``/failures``: every failure report received, unclassified ones included, for triage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Text, cast, exists, func, or_, select
from sqlalchemy.orm import Session, selectinload

from bot.dashboard.filters import FailureFilters
from bot.dashboard.keyset import keyset_page
from bot.dashboard.queries import COUNT_CAP
from bot.db.models import CiFailure, RepairRun, RunState
from bot.db.records.delivery_waits import Waiting, waiting
from bot.db.tally_fold import read_totals

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
    """One page of reports, the total it is part of (``exact`` False: at least that many), and
    the cursors of the pages either side."""

    rows: list[FailureRow]
    total: int
    exact: bool
    newer: int | None
    older: int | None
    waiting: list[Waiting] = field(default_factory=list)  # deliveries waiting on an API
    waiting_total: int = 0


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


def _total(session: Session, filters: FailureFilters, conditions: list[Any]) -> tuple[int, bool]:
    if not filters.q:
        funnel = read_totals(session, ("funnel",)).figures
        received = funnel.get(("funnel", "received", ""), (0, 0.0))[0]
        classified = funnel.get(("funnel", "classified", ""), (0, 0.0))[0]
        if filters.kind == "classified":
            return classified, True
        return (received - classified if filters.kind == UNCLASSIFIED else received), True
    matching = select(CiFailure.id).where(*conditions).limit(COUNT_CAP + 1)
    counted = session.scalar(select(func.count()).select_from(matching.subquery())) or 0
    return min(counted, COUNT_CAP), counted <= COUNT_CAP


def list_failures(session: Session, *, filters: FailureFilters) -> FailurePage:
    """One page of reports, newest first (keyed by id; totals from the running totals)."""
    conditions = _conditions(filters)
    query = select(CiFailure).where(*conditions).options(selectinload(CiFailure.runs))
    page = keyset_page(
        session, query, CiFailure.id, conditions, before=filters.before, after=filters.after
    )
    rows = []
    for (report,) in page.rows:
        findings = [f for f in report.findings or [] if isinstance(f, dict)]
        signatures = list(dict.fromkeys(str(f.get("signature", "")) for f in findings))
        evidence = "\n\n".join(str(f.get("evidence") or "") for f in findings[:3]).strip()
        rows.append(FailureRow(report, top_error(findings), signatures, evidence))
    total, exact = _total(session, filters, conditions)
    shown, waiting_total = waiting(session)
    return FailurePage(rows, total, exact, page.newer, page.older, shown, waiting_total)
