"""The header of ``/``: the funnel of failures, median times, and the data behind the charts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from sqlalchemy import distinct, func, select
from sqlalchemy.orm import Session

from bot.dashboard.formatting import aware, median, seconds_between
from bot.db.models import (
    CiFailure,
    Fix,
    FixState,
    RepairRun,
    RunState,
    Verdict,
    Verification,
)

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


def funnel(session: Session) -> list[FunnelStep]:
    """Failures received → classified → fixed → verified → merged (counted in reports)."""
    received = session.scalar(select(func.count(CiFailure.id))) or 0
    reports = select(func.count(distinct(RepairRun.report_id)))
    counts = [
        session.scalar(query) or 0
        for query in (
            reports.where(RepairRun.state != RunState.UNCLASSIFIED.value),
            reports.where(RepairRun.fix_id.is_not(None)),
            reports.join(Verification, Verification.fix_id == RepairRun.fix_id).where(
                Verification.verdict == Verdict.FIXED.value
            ),
            reports.join(Fix, Fix.id == RepairRun.fix_id).where(Fix.state == FixState.MERGED.value),
        )
    ]
    labels = [
        ("received", "Failures received"),
        ("classified", "Classified"),
        ("fixed", "Fix PR"),
        ("verified", "Verified fixed"),
        ("merged", "Merged"),
    ]
    return [
        FunnelStep(key, label, count, count / received if received else 0.0)
        for (key, label), count in zip(labels, [received, *counts], strict=True)
    ]


def pr_times(session: Session) -> list[float]:
    """Seconds from the first failure to the PR, for the most recent fixes."""
    recent = select(Fix.id).order_by(Fix.id.desc()).limit(WINDOW).subquery()
    rows = session.execute(
        select(Fix.created_at, func.min(CiFailure.received_at))
        .join(recent, recent.c.id == Fix.id)
        .join(RepairRun, RepairRun.fix_id == Fix.id)
        .join(CiFailure, CiFailure.id == RepairRun.report_id)
        .group_by(Fix.id, Fix.created_at)
    ).all()
    return [
        s for created, received in rows if (s := seconds_between(received, created)) is not None
    ]


def medians(session: Session, *, to_pr: list[float]) -> Medians:
    """Median time to classify, to PR, from PR to verdict and from PR to merge."""
    classify = session.execute(
        select(CiFailure.received_at, CiFailure.classified_at)
        .where(CiFailure.classified_at.is_not(None))
        .order_by(CiFailure.id.desc())
        .limit(WINDOW)
    ).all()
    verdict = session.execute(
        select(Fix.created_at, Verification.finished_at)
        .join(Fix, Fix.id == Verification.fix_id)
        .where(Verification.verdict.is_not(None), Verification.finished_at.is_not(None))
        .order_by(Verification.id.desc())
        .limit(WINDOW)
    ).all()
    merge = session.execute(
        select(Fix.created_at, Fix.closed_at)
        .where(Fix.state == FixState.MERGED.value, Fix.closed_at.is_not(None))
        .order_by(Fix.id.desc())
        .limit(WINDOW)
    ).all()

    def seconds(pairs: list[tuple[datetime | None, datetime | None]]) -> list[float]:
        return [s for a, b in pairs if (s := seconds_between(a, b)) is not None]

    return Medians(
        to_classify=median(seconds([(a, b) for a, b in classify])),
        to_pr=median(to_pr),
        to_verdict=median(seconds([(a, b) for a, b in verdict])),
        to_merge=median(seconds([(a, b) for a, b in merge])),
    )


def fixes_per_day(session: Session, *, today: date) -> dict[tuple[date, str], int]:
    """Fix PRs opened per UTC day and state over the last ``CHART_DAYS`` days."""
    since = datetime(today.year, today.month, today.day) - timedelta(days=CHART_DAYS - 1)
    day = func.date(Fix.created_at)
    rows = session.execute(
        select(day, Fix.state, func.count(Fix.id))
        .where(Fix.created_at >= aware(since))
        .group_by(day, Fix.state)
    ).all()
    counts: Counter[tuple[date, str]] = Counter()
    for value, state, count in rows:
        counts[(date.fromisoformat(str(value)[:10]), state)] += count
    return dict(counts)


def verdict_counts(session: Session) -> dict[str, int]:
    """How many verifications ended with each verdict."""
    rows = session.execute(
        select(Verification.verdict, func.count(Verification.id))
        .where(Verification.verdict.is_not(None))
        .group_by(Verification.verdict)
    ).all()
    return {str(verdict): count for verdict, count in rows}


def overview(session: Session, *, now: datetime) -> Overview:
    """The funnel, the medians and the chart data in one go."""
    today = (aware(now) or now).date()
    times = pr_times(session)
    return Overview(
        funnel=funnel(session),
        medians=medians(session, to_pr=times),
        days=[today - timedelta(days=n) for n in range(CHART_DAYS - 1, -1, -1)],
        per_day=fixes_per_day(session, today=today),
        verdicts=verdict_counts(session),
        pr_times=times,
    )
