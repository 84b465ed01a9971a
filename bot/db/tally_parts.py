"""What one fix PR or one failure report adds to the dashboard's running totals: pure functions
of the row's facts, so a total is the sum of its parts however the rows changed.

Names (``tallies.name``) and what they count:

- ``fix_state`` / ``fix_repository`` / ``fix_signature`` (key: the value): fix PRs, for the
  state counts, the filter menus and the list's totals.
- ``fix_day`` (key: the UTC day it was opened, ``YYYY-MM-DD``; measure: its state): fix PRs per
  day, for the chart.
- ``verdict`` (key: the verdict): finished verifications per verdict.
- ``device`` (key: the device): finished verifications and their seconds.
- ``funnel`` (key: received, classified, fixed, verified, merged): failure reports that got
  that far (a report counts once per step, whatever number of root causes it had).
- ``quality:all`` (key ``all``), ``quality:signature``, ``quality:codemod`` (key: the signature
  or codemod): for opened PRs, one count per outcome (``Outcomes``' fields in
  ``bot.dashboard.quality``), the failure → verified-fix durations as a histogram
  (``to_verified:<bucket>``, see :func:`duration_bucket`) and ``device:<name>`` seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bot.db.models import FixState, RunState, Verdict

UNKNOWN_DEVICE = "unknown device"
# Durations are counted in buckets 2% wide: the middle of a bucket is within 1% of every
# duration in it, so a median read off the histogram is within 1% of the exact one.
BUCKET_RATIO = 1.02
_LOG_RATIO = math.log(BUCKET_RATIO)
TO_VERIFIED = "to_verified:"
DEVICE = "device:"
FUNNEL_STEPS = ("received", "classified", "fixed", "verified", "merged")
KEY_LIMIT = 255

Figure = tuple[str, str, str]  # (name, key, measure)
Parts = dict[Figure, tuple[int, float]]  # figure → (count, seconds)


@dataclass(frozen=True)
class VerificationFacts:
    """What a verification adds: its verdict, device and how long it ran."""

    verdict: str | None
    device: str | None
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True)
class FixFacts:
    """A fix PR as the totals see it."""

    repository: str
    signature: str
    state: str
    created_at: datetime
    number: int | None
    merged_with_edits: bool | None
    codemods: tuple[str, ...]
    reverted: bool
    first_failure_at: datetime | None
    verifications: tuple[VerificationFacts, ...] = field(default=())


@dataclass(frozen=True)
class ReportFacts:
    """A failure report as the funnel sees it: how far its root causes got."""

    run_states: tuple[str, ...]
    fix_states: tuple[str, ...]  # of the fixes its runs opened
    verified: bool  # one of those fixes has a verification with the verdict "fixed"


def _utc(moment: datetime) -> datetime:
    # SQLite hands back naive datetimes stored as UTC; PostgreSQL aware ones.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    """Seconds from ``start`` to ``end``, or None when either is missing (the one definition:
    the dashboard uses it too)."""
    if start is None or end is None:
        return None
    return (_utc(end) - _utc(start)).total_seconds()


def duration_bucket(seconds: float) -> int:
    """The histogram bucket of a duration: 0 for [0, 1) s, ``1 + ⌊log₁.₀₂ s⌋`` from a second
    on; the same mirrored below zero (-1 for (-1, 0) s), which clock skew between hosts can
    make."""
    if seconds >= 0:
        return 0 if seconds < 1 else 1 + math.floor(math.log(seconds) / _LOG_RATIO)
    return -1 if seconds > -1 else -2 - math.floor(math.log(-seconds) / _LOG_RATIO)


def bucket_middle(bucket: int) -> float:
    """The value a bucket stands for: the geometric middle of its range (±0.5 s under one)."""
    if bucket in (0, -1):
        return 0.5 if bucket == 0 else -0.5
    middle: float = BUCKET_RATIO ** ((bucket if bucket > 0 else -bucket - 1) - 0.5)
    return middle if bucket > 0 else -middle


def histogram_median(buckets: Iterable[tuple[int, int]]) -> float | None:
    """The median of the durations a histogram of ``(bucket, count)`` holds, read from the
    buckets' middles: within 1% of the exact median (0.5 s under a second); None when empty."""
    ordered = sorted((b, n) for b, n in buckets if n > 0)
    total = sum(n for _, n in ordered)
    if not total:
        return None
    wanted = sorted({(total + 1) // 2, (total + 2) // 2})  # 1-based ranks of the middle
    found: list[float] = []
    seen = 0
    for bucket, count in ordered:
        seen += count
        while wanted and wanted[0] <= seen:
            found.append(bucket_middle(bucket))
            wanted.pop(0)
    return sum(found) / len(found)


def _key(value: str) -> str:
    return value[:KEY_LIMIT]


def _outcome_measures(fix: FixFacts) -> list[str]:
    merged = fix.state == FixState.MERGED.value
    unchanged = merged and fix.merged_with_edits is False
    flags = {
        "opened": True,
        "open": fix.state == FixState.OPEN.value,
        "merged_unchanged": unchanged,
        "merged_edited": merged and fix.merged_with_edits is True,
        "merged_unknown": merged and fix.merged_with_edits is None,
        "closed": fix.state == FixState.CLOSED.value,
        "superseded": fix.state == FixState.SUPERSEDED.value,
        "reverted": fix.reverted,
        "landed_unchanged": unchanged and not fix.reverted,
    }
    return [measure for measure, holds in flags.items() if holds]


def _to_verified(fix: FixFacts) -> float | None:
    fixed = [
        v.finished_at
        for v in fix.verifications
        if v.verdict == Verdict.FIXED.value and v.finished_at is not None
    ]
    return seconds_between(fix.first_failure_at, min(fixed, key=_utc)) if fixed else None


def _device_runs(fix: FixFacts) -> list[tuple[str, float]]:
    return [
        (_key(v.device or UNKNOWN_DEVICE), took)
        for v in fix.verifications
        if (took := seconds_between(v.started_at, v.finished_at)) is not None
    ]


def _add(parts: Parts, figure: Figure, count: int = 1, seconds: float = 0.0) -> None:
    was_count, was_seconds = parts.get(figure, (0, 0.0))
    parts[figure] = (was_count + count, was_seconds + seconds)


def fix_parts(fix: FixFacts) -> Parts:
    """Everything one fix PR adds to the totals."""
    parts: Parts = {}
    _add(parts, ("fix_state", _key(fix.state), ""))
    _add(parts, ("fix_repository", _key(fix.repository), ""))
    _add(parts, ("fix_signature", _key(fix.signature), ""))
    _add(parts, ("fix_day", _utc(fix.created_at).date().isoformat(), _key(fix.state)))
    devices = _device_runs(fix)
    for v in fix.verifications:
        if v.verdict is not None:
            _add(parts, ("verdict", _key(v.verdict), ""))
    for device, took in devices:
        _add(parts, ("device", device, ""), seconds=took)
    if fix.number is None:
        return parts  # the quality figures count opened PRs only
    groups = [("quality:all", "all"), ("quality:signature", _key(fix.signature))]
    groups += [("quality:codemod", _key(str(codemod))) for codemod in fix.codemods]
    measures = _outcome_measures(fix)
    took_to_verified = _to_verified(fix)
    for name, key in groups:
        for measure in measures:
            _add(parts, (name, key, measure))
        if took_to_verified is not None:
            _add(parts, (name, key, f"{TO_VERIFIED}{duration_bucket(took_to_verified)}"))
        for device, took in devices:
            _add(parts, (name, key, f"{DEVICE}{device}"), seconds=took)
    return parts


def report_parts(report: ReportFacts) -> Parts:
    """Everything one failure report adds to the totals: the funnel steps it reached."""
    reached = {
        "received": True,
        "classified": any(s != RunState.UNCLASSIFIED.value for s in report.run_states),
        "fixed": bool(report.fix_states),
        "verified": report.verified,
        "merged": FixState.MERGED.value in report.fix_states,
    }
    return {("funnel", step, ""): (1, 0.0) for step in FUNNEL_STEPS if reached[step]}


def difference(new: Parts, old: Parts) -> Parts:
    """``new - old`` per figure, leaving out the figures that did not change."""
    changed: Parts = {}
    for figure in new.keys() | old.keys():
        new_count, new_seconds = new.get(figure, (0, 0.0))
        old_count, old_seconds = old.get(figure, (0, 0.0))
        if new_count != old_count or new_seconds != old_seconds:
            changed[figure] = (new_count - old_count, new_seconds - old_seconds)
    return changed


def summed(parts: Iterable[Parts]) -> Parts:
    """Several rows' parts added up."""
    total: Parts = {}
    for one in parts:
        for figure, (count, seconds) in one.items():
            _add(total, figure, count, seconds)
    return total
