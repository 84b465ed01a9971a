"""The header of ``/``: the funnel of failures, median times, and the data behind the charts."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, extract, func, select
from sqlalchemy.orm import Session

from bot.dashboard.formatting import aware, median
from bot.db.models import (
    CiFailure,
    Fix,
    FixState,
    RepairRun,
    Verdict,
    Verification,
)
from bot.db.tally_parts import Parts

OVERVIEW_TOTALS = ("funnel", "verdict", "fix_day")
WINDOW = 500  # medians and the time-to-PR histogram look at this many recent items
CHART_DAYS = 14


@dataclass(frozen=True)
class FunnelStep:
    """One step of the funnel, counted in failures received."""

    key: str
    label: str
    count: int
    share: float  # of failures received, 0..1


@dataclass(frozen=True)
class Medians:
    """Median durations in seconds (None when nothing has happened yet)."""

    to_classify: float | None
    to_pr: float | None
    to_verdict: float | None
    to_merge: float | None


@dataclass
class Overview:
    """Everything the header and the charts show."""

    funnel: list[FunnelStep]
    medians: Medians
    days: list[date]
    per_day: dict[tuple[date, str], int]
    verdicts: dict[str, int]
    pr_times: list[float] = field(default_factory=list)

    @property
    def pass_rate(self) -> float | None:
        """Share of finished verifications whose verdict is ``fixed``."""
        total = sum(self.verdicts.values())
        return self.verdicts.get(Verdict.FIXED.value, 0) / total if total else None


FUNNEL_LABELS = (
    ("received", "Failures received"),
    ("classified", "Classified"),
    ("fixed", "Fix PR"),
    ("verified", "Verified fixed"),
    ("merged", "Merged"),
)


def funnel(figures: Parts) -> list[FunnelStep]:
    """Failures received → classified → fixed → verified → merged (counted in reports), from
    the running totals."""
    counts = {key: figures.get(("funnel", key, ""), (0, 0.0))[0] for key, _ in FUNNEL_LABELS}
    received = counts["received"]
    return [
        FunnelStep(key, label, counts[key], counts[key] / received if received else 0.0)
        for key, label in FUNNEL_LABELS
    ]


def _seconds(session: Session, start: Any, end: Any) -> ColumnElement[Any]:
    """``end - start`` in seconds, computed by the database (no datetime per row in Python)."""
    if session.get_bind().dialect.name == "sqlite":
        return (func.julianday(end) - func.julianday(start)) * 86400.0
    return extract("epoch", end - start)


def _durations(session: Session, query: Select[Any]) -> list[float]:
    return [float(s) for s in session.scalars(query) if s is not None]


def pr_times(session: Session) -> list[float]:
    """Seconds from the first failure to the PR, for the most recent fixes."""
    recent = select(Fix.id).order_by(Fix.id.desc()).limit(WINDOW).subquery()
    return _durations(
        session,
        select(_seconds(session, func.min(CiFailure.received_at), Fix.created_at))
        .join(recent, recent.c.id == Fix.id)
        .join(RepairRun, RepairRun.fix_id == Fix.id)
        .join(CiFailure, CiFailure.id == RepairRun.report_id)
        .group_by(Fix.id, Fix.created_at),
    )


def medians(session: Session, *, to_pr: list[float]) -> Medians:
    """Median time to classify, to PR, from PR to verdict and from PR to merge."""
    classify = (
        select(_seconds(session, CiFailure.received_at, CiFailure.classified_at))
        .where(CiFailure.classified_at.is_not(None))
        .order_by(CiFailure.id.desc())
        .limit(WINDOW)
    )
    verdict = (
        select(_seconds(session, Fix.created_at, Verification.finished_at))
        .join(Fix, Fix.id == Verification.fix_id)
        .where(Verification.verdict.is_not(None), Verification.finished_at.is_not(None))
        .order_by(Verification.id.desc())
        .limit(WINDOW)
    )
    merge = (
        select(_seconds(session, Fix.created_at, Fix.closed_at))
        .where(Fix.state == FixState.MERGED.value, Fix.closed_at.is_not(None))
        .order_by(Fix.id.desc())
        .limit(WINDOW)
    )
    return Medians(
        to_classify=median(_durations(session, classify)),
        to_pr=median(to_pr),
        to_verdict=median(_durations(session, verdict)),
        to_merge=median(_durations(session, merge)),
    )


def chart_start(today: date) -> date:
    """The first day the fix-PRs-per-day chart shows."""
    return today - timedelta(days=CHART_DAYS - 1)


def fixes_per_day(figures: Parts, *, today: date) -> dict[tuple[date, str], int]:
    """Fix PRs opened per UTC day and state over the last ``CHART_DAYS`` days, from the
    running totals."""
    first = chart_start(today).isoformat()
    return {
        (date.fromisoformat(key), state): count
        for (name, key, state), (count, _) in figures.items()
        if name == "fix_day" and key >= first and count
    }


def verdict_counts(figures: Parts) -> dict[str, int]:
    """How many verifications ended with each verdict, from the running totals."""
    return {key: count for (name, key, _), (count, _) in figures.items() if name == "verdict"}


def overview(session: Session, *, now: datetime, figures: Parts) -> Overview:
    """The funnel, the medians and the chart data in one go (``figures``: the running totals
    of ``OVERVIEW_TOTALS``)."""
    today = (aware(now) or now).date()
    times = pr_times(session)
    return Overview(
        funnel=funnel(figures),
        medians=medians(session, to_pr=times),
        days=[today - timedelta(days=n) for n in range(CHART_DAYS - 1, -1, -1)],
        per_day=fixes_per_day(figures, today=today),
        verdicts=verdict_counts(figures),
        pr_times=times,
    )
