"""The fix PR list: filtered in SQL, one page of rows at a time, keyed by id (no OFFSET: a deep
page costs what the first does), every filter on an index, free text through the search table
(``bot.dashboard.search``), totals from the running totals."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, func, or_, select
from sqlalchemy.orm import Session

from bot.dashboard.filters import UNVERIFIED, FixFilters
from bot.dashboard.keyset import keyset_page
from bot.dashboard.search import count_matches, matches, search_page
from bot.db.models import CiFailure, Fix, RepairRun, Verification
from bot.db.tally_parts import Parts, seconds_between

# The class of a ``fixes.violations`` line: its last code span, right before ``(kind)``.
CLASS_IN_VIOLATION = re.compile(r"`([^`]+)` \([^()`]*\)\s*$")
FACET_LIMIT = 200
COUNT_CAP = 1_000  # a filter no running total counts is counted up to here ("1000+")


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
    """One page of the filtered list, the total it is part of (``exact`` False: at least that
    many, the count stopped at ``COUNT_CAP``), and the cursors of the pages either side."""

    rows: list[FixRow]
    total: int
    exact: bool
    newer: int | None  # ``after`` for the page of newer rows, None when there are none
    older: int | None  # ``before`` for the page of older rows


LIST_TOTALS = ("fix_state", "fix_repository", "fix_signature")
LIST_COLUMNS = (
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
    """The WHERE clauses for ``filters`` on ``fixes``' own columns (a search for ``#N`` is one:
    the PR or fix number; free text is searched through ``bot.dashboard.search``)."""
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
    number = _number(filters.q)
    if number is not None:
        conditions.append(or_(Fix.id == number, Fix.number == number))
    return conditions


def _number(q: str) -> int | None:
    number = q.removeprefix("#")
    return int(number) if number.isdigit() and len(number) < 10 else None


def _total(
    session: Session, filters: FixFilters, others: list[ColumnElement[bool]], figures: Parts
) -> tuple[int, bool]:
    facets = [
        (name, value)
        for name, value in (
            ("fix_state", filters.state),
            ("fix_repository", filters.repository),
            ("fix_signature", filters.signature),
        )
        if value
    ]
    if not (filters.verdict or filters.q or len(facets) > 1):
        if not facets:
            return sum(c for (n, _, _), (c, _) in figures.items() if n == "fix_state"), True
        [(name, value)] = facets
        return figures.get((name, value, ""), (0, 0.0))[0], True
    if filters.q and _number(filters.q) is None:
        counted = count_matches(session, matches(session, filters.q, others), COUNT_CAP)
    else:
        matching = select(Fix.id).where(*others).limit(COUNT_CAP + 1)
        counted = session.scalar(select(func.count()).select_from(matching.subquery())) or 0
    return min(counted, COUNT_CAP), counted <= COUNT_CAP


def list_fixes(session: Session, *, filters: FixFilters, figures: Parts) -> FixPage:
    """One page of fix PRs, newest first, filtered in SQL (``figures``: the running totals of
    ``LIST_TOTALS``)."""
    conditions = fix_conditions(filters)
    if filters.q and _number(filters.q) is None:
        # Ids first, the page's columns after: sorting matches carries no wide rows.
        found = search_page(session, filters, matches(session, filters.q, conditions))
        wanted = [row.id for row in found.rows]
        chosen = session.execute(select(*LIST_COLUMNS).where(Fix.id.in_(wanted))).all()
        page = replace(found, rows=sorted(chosen, key=lambda row: -row.id))
    else:
        query = select(*LIST_COLUMNS).where(*conditions)
        page = keyset_page(
            session, query, Fix.id, conditions, before=filters.before, after=filters.after
        )
    rows, newer, older = page.rows, page.newer, page.older
    total, exact = _total(session, filters, conditions, figures)
    ids = [row.id for row in rows]
    verifications = latest_verifications(session, fix_ids=ids)
    failures = first_failures(session, fix_ids=ids)
    return FixPage(
        rows=[_row(row, verifications.get(row.id), failures.get(row.id)) for row in rows],
        total=total,
        exact=exact,
        newer=newer,
        older=older,
    )


def _row(row: Any, verification: VerificationSummary | None, failure_at: datetime | None) -> FixRow:
    return FixRow(
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
        failure_at=failure_at,
        verification=verification,
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
    # The summary's columns only: a verification's log and results are large.
    found = session.execute(
        select(
            Verification.id,
            Verification.fix_id,
            Verification.state,
            Verification.verdict,
            Verification.device,
            Verification.queue,
            Verification.requested_queue,
            Verification.on_requested_device,
            Verification.finished_at,
        ).where(Verification.id.in_(newest))
    ).all()
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


def facets(figures: Parts) -> dict[str, list[str]]:
    """The values the filter menus offer: repositories and signatures seen on fixes."""
    found: dict[str, list[str]] = {"repositories": [], "signatures": []}
    menus = {"fix_repository": "repositories", "fix_signature": "signatures"}
    for (name, key, _), (count, _) in figures.items():
        if name in menus and count > 0:
            found[menus[name]].append(key)
    return {menu: sorted(values)[:FACET_LIMIT] for menu, values in found.items()}


def state_counts(figures: Parts) -> dict[str, int]:
    """How many fix PRs are in each state."""
    return {key: count for (name, key, _), (count, _) in figures.items() if name == "fix_state"}
