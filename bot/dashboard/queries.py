"""The fix PR list: filtered and paginated in SQL, one page of rows loaded at a time."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Text, cast, func, or_, select
from sqlalchemy.orm import Session

from bot.dashboard.filters import PAGE_SIZE, UNVERIFIED, FixFilters
from bot.dashboard.formatting import seconds_between
from bot.db.models import CiFailure, Fix, RepairRun, Verification

# The class of a ``fixes.violations`` line: its last code span, right before ``(kind)``.
CLASS_IN_VIOLATION = re.compile(r"`([^`]+)` \([^()`]*\)\s*$")
FACET_LIMIT = 200


@dataclass(frozen=True)
class VerificationSummary:
    """The latest verification of a fix, as the list shows it."""

    id: int
    state: str
    verdict: str | None
    device: str | None
    queue: str | None
    requested_queue: str
    on_requested_device: bool | None
    finished_at: datetime | None


@dataclass(frozen=True)
class FixRow:
    """One fix PR in the list."""

    id: int
    repository: str
    number: int | None
    url: str | None
    title: str
    signature: str
    state: str
    state_reason: str
    branch: str
    files: list[str]
    classes: list[str]
    violation_count: int
    created_at: datetime
    closed_at: datetime | None
    failure_at: datetime | None
    verification: VerificationSummary | None

    @property
    def time_to_pr(self) -> float | None:
        """Seconds from the first failure received to the PR."""
        return seconds_between(self.failure_at, self.created_at)


@dataclass(frozen=True)
class FixPage:
    """One page of the filtered list, with the totals the pager needs."""

    rows: list[FixRow]
    total: int
    page: int
    pages: int


def classes_of(violations: list[Any]) -> list[str]:
    """The class names named in ``path:line `Class` (kind)`` violation strings, in order."""
    found: list[str] = []
    for violation in violations:
        for name in CLASS_IN_VIOLATION.findall(str(violation)):
            if name not in found:
                found.append(name)
    return found


def latest_verdict() -> Any:
    """The verdict of a fix's newest verification, as a correlated scalar subquery."""
    return (
        select(Verification.verdict)
        .where(Verification.fix_id == Fix.id)
        .order_by(Verification.id.desc())
        .limit(1)
        .scalar_subquery()
    )


def fix_conditions(filters: FixFilters) -> list[ColumnElement[bool]]:
    """The WHERE clauses for ``filters``."""
    conditions: list[ColumnElement[bool]] = []
    if filters.repository:
        conditions.append(Fix.repository == filters.repository)
    if filters.state:
        conditions.append(Fix.state == filters.state)
    if filters.signature:
        conditions.append(Fix.signature == filters.signature)
    if filters.verdict == UNVERIFIED:
        conditions.append(latest_verdict().is_(None))
    elif filters.verdict:
        conditions.append(latest_verdict() == filters.verdict)
    if filters.q:
        conditions.append(_search(filters.q))
    return conditions


def _search(q: str) -> ColumnElement[bool]:
    number = q.removeprefix("#")
    if number.isdigit() and len(number) < 10:
        return or_(Fix.id == int(number), Fix.number == int(number))
    return or_(
        *(
            column.icontains(q, autoescape=True)
            for column in (Fix.title, Fix.repository, Fix.branch, cast(Fix.violations, Text))
        )
    )


def list_fixes(session: Session, *, filters: FixFilters) -> FixPage:
    """One page of fix PRs, newest first, filtered in SQL."""
    conditions = fix_conditions(filters)
    total = session.scalar(select(func.count(Fix.id)).where(*conditions)) or 0
    pages = max(1, math.ceil(total / PAGE_SIZE))
    page = min(filters.page, pages)
    rows = session.execute(
        select(
            Fix.id,
            Fix.repository,
            Fix.number,
            Fix.url,
            Fix.title,
            Fix.signature,
            Fix.state,
            Fix.state_reason,
            Fix.branch,
            Fix.files,
            Fix.violations,
            Fix.created_at,
            Fix.closed_at,
        )
        .where(*conditions)
        .order_by(Fix.id.desc())
        .limit(PAGE_SIZE)
        .offset((page - 1) * PAGE_SIZE)
    ).all()
    ids = [row.id for row in rows]
    verifications = latest_verifications(session, fix_ids=ids)
    failures = first_failures(session, fix_ids=ids)
    return FixPage(
        rows=[
            FixRow(
                id=row.id,
                repository=row.repository,
                number=row.number,
                url=row.url,
                title=row.title,
                signature=row.signature,
                state=row.state,
                state_reason=row.state_reason,
                branch=row.branch,
                files=[str(path) for path in row.files or []],
                classes=classes_of(row.violations or []),
                violation_count=len(row.violations or []),
                created_at=row.created_at,
                closed_at=row.closed_at,
                failure_at=failures.get(row.id),
                verification=verifications.get(row.id),
            )
            for row in rows
        ],
        total=total,
        page=page,
        pages=pages,
    )


def latest_verifications(session: Session, *, fix_ids: list[int]) -> dict[int, VerificationSummary]:
    """The newest verification of each of ``fix_ids`` (fixes without one are absent)."""
    if not fix_ids:
        return {}
    newest = (
        select(func.max(Verification.id))
        .where(Verification.fix_id.in_(fix_ids))
        .group_by(Verification.fix_id)
    )
    found = session.scalars(select(Verification).where(Verification.id.in_(newest))).all()
    return {
        v.fix_id: VerificationSummary(
            id=v.id,
            state=v.state,
            verdict=v.verdict,
            device=v.device,
            queue=v.queue,
            requested_queue=v.requested_queue,
            on_requested_device=v.on_requested_device,
            finished_at=v.finished_at,
        )
        for v in found
    }


def first_failures(session: Session, *, fix_ids: list[int]) -> dict[int, datetime]:
    """When the earliest failure that led to each fix was received."""
    if not fix_ids:
        return {}
    rows = session.execute(
        select(RepairRun.fix_id, func.min(CiFailure.received_at))
        .join(CiFailure, CiFailure.id == RepairRun.report_id)
        .where(RepairRun.fix_id.in_(fix_ids))
        .group_by(RepairRun.fix_id)
    ).all()
    return {fix_id: received for fix_id, received in rows if fix_id is not None}


def facets(session: Session) -> dict[str, list[str]]:
    """The values the filter menus offer: repositories and signatures seen on fixes."""
    return {
        "repositories": list(
            session.scalars(
                select(Fix.repository).distinct().order_by(Fix.repository).limit(FACET_LIMIT)
            )
        ),
        "signatures": list(
            session.scalars(
                select(Fix.signature).distinct().order_by(Fix.signature).limit(FACET_LIMIT)
            )
        ),
    }


def state_counts(session: Session) -> dict[str, int]:
    """How many fix PRs are in each state."""
    rows = session.execute(select(Fix.state, func.count(Fix.id)).group_by(Fix.state)).all()
    return {state: count for state, count in rows}
