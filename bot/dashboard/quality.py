"""``/quality``: how the bot's fix PRs landed, per signature and per codemod, counted in SQL.

Every figure is an aggregate query over the database (no process keeps a counter), so every
replica shows the same. The definitions, as the page states them:

- **opened**: fix PRs the bot opened (a row with a PR number).
- **merged unchanged / after human edits**: merged with the bot's last pushed head, or with a
  head a human moved and whose diff changed files (``bot.pipeline.merge_outcome``); merges
  recorded before the heads were kept count as merged, neither of the two.
- **closed unmerged**: closed by someone without merging; **superseded**: closed by the bot
  because another PR fixed the same violations.
- **reverted**: merged, then reverted on the base (a ``reverted`` suppression names the fix).
- **landed unchanged** (the headline): merged unchanged and not reverted ÷ decided (merged,
  closed unmerged or superseded); open PRs are not decided yet.
- **failure → verified fix**: the first failure behind a fix received → the first of its
  verifications that finished with the verdict ``fixed``; the median, in SQL.
- **device-minutes**: started → finished of every finished verification, summed by the device
  the runner recorded (``verifications.device``).

A fix that applied several codemods counts once under each of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    ColumnElement,
    Integer,
    String,
    Subquery,
    and_,
    case,
    extract,
    func,
    literal_column,
    select,
    text,
    true,
    union_all,
)
from sqlalchemy.orm import Session

from bot.db.models import (
    CiFailure,
    Fix,
    FixState,
    RepairRun,
    Suppression,
    SuppressionReason,
    Verdict,
    Verification,
)

Grouping = Literal["all", "signature", "codemod"]
GROUPINGS: tuple[Grouping, ...] = ("all", "signature", "codemod")
KEYED = ("grouping", "key", "fix_id", "state", "edits")
BY_KEY: tuple[Grouping, ...] = ("signature", "codemod")
COUNTS = (
    "opened",
    "open",
    "merged_unchanged",
    "merged_edited",
    "merged_unknown",
    "closed",
    "superseded",
    "reverted",
    "landed_unchanged",
)
UNKNOWN_DEVICE = "unknown device"
EDITED_LIST = 20


@dataclass
class Outcomes:
    """The quality figures of one signature, one codemod, or every fix PR (``key`` "all")."""

    key: str
    opened: int = 0
    open: int = 0
    merged_unchanged: int = 0
    merged_edited: int = 0
    merged_unknown: int = 0
    closed: int = 0
    superseded: int = 0
    reverted: int = 0
    landed_unchanged: int = 0
    median_to_verified: float | None = None  # seconds
    device_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def decided(self) -> int:
        """Fix PRs that are no longer open: merged, closed unmerged or superseded."""
        return (
            self.merged_unchanged
            + self.merged_edited
            + self.merged_unknown
            + self.closed
            + self.superseded
        )

    @property
    def landed_rate(self) -> float | None:
        """Landed unchanged ÷ decided, 0..1 (None while nothing is decided)."""
        return self.landed_unchanged / self.decided if self.decided else None

    @property
    def device_minutes(self) -> float:
        """Verification time on every device, in minutes."""
        return sum(self.device_seconds.values()) / 60


@dataclass(frozen=True)
class DeviceTime:
    """Finished verifications on one device and the time they took."""

    device: str
    verifications: int
    seconds: float

    @property
    def minutes(self) -> float:
        """``seconds`` in minutes."""
        return self.seconds / 60


@dataclass(frozen=True)
class EditedFix:
    """A fix PR merged after a human's edits (its page shows the diff)."""

    id: int
    number: int | None
    title: str
    signature: str
    closed_at: datetime | None


@dataclass
class Quality:
    """Everything ``/quality`` shows."""

    total: Outcomes
    by_signature: list[Outcomes]
    by_codemod: list[Outcomes]
    devices: list[DeviceTime]
    edited: list[EditedFix]


def epoch(session: Session, column: Any) -> ColumnElement[Any]:
    """Seconds since the epoch of a timestamp column, in this database's own SQL."""
    if session.get_bind().dialect.name == "sqlite":
        return func.julianday(column) * 86400.0  # SQLite keeps UTC text; julianday reads it
    return extract("epoch", column)


def _constant(value: Grouping) -> ColumnElement[Any]:
    # Inline SQL text (one of our own names), not a parameter: PostgreSQL must type a UNION's
    # columns and GROUP BY them, which it cannot do for an untyped parameter.
    return literal_column(f"'{value}'", String)


def keyed(session: Session, groupings: tuple[Grouping, ...] = GROUPINGS) -> Subquery:
    """``(grouping, key, fix_id, state, edits)`` for every opened fix PR: once under "all", once
    under its signature, once per codemod it applied. Reads ``ix_fixes_outcomes`` alone."""
    outcome = (Fix.id.label("fix_id"), Fix.state.label("state"), Fix.merged_with_edits)
    opened = Fix.number.is_not(None)
    parts = []
    key: Any
    for grouping in groupings:
        if grouping == "codemod":
            if session.get_bind().dialect.name == "sqlite":
                each = func.json_each(Fix.codemods).table_valued("value", joins_implicitly=True)
            else:
                each = func.jsonb_array_elements_text(Fix.codemods).table_valued(
                    "value", joins_implicitly=True
                )
            key = each.c.value
            source = select(_constant(grouping), key, *outcome).select_from(Fix).join(each, true())
        else:
            key = Fix.signature if grouping == "signature" else _constant("all")
            source = select(_constant(grouping), key, *outcome)
        parts.append(source.where(opened))
    first, *rest = parts
    labelled = first.with_only_columns(
        *(column.label(name) for column, name in zip(first.selected_columns, KEYED, strict=True)),
        maintain_column_froms=True,
    )
    return union_all(labelled, *rest).subquery()


def _count(condition: ColumnElement[bool]) -> ColumnElement[Any]:
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


def _outcomes(key: str, counts: list[Any]) -> Outcomes:
    row = Outcomes(key)
    for name, count in zip(COUNTS, counts, strict=True):
        setattr(row, name, int(count))
    return row


def outcome_counts(
    session: Session, groupings: tuple[Grouping, ...] = BY_KEY
) -> dict[tuple[str, str], Outcomes]:
    """Opened, open, merged unchanged/edited/unknown, closed, superseded, reverted and landed
    unchanged, per ``(grouping, key)``: one query."""
    rows = keyed(session, groupings)
    reverted_ids = select(Suppression.fix_id).where(
        Suppression.reason == SuppressionReason.REVERTED.value, Suppression.fix_id.is_not(None)
    )
    merged = rows.c.state == FixState.MERGED.value
    reverted = rows.c.fix_id.in_(reverted_ids)
    unchanged = and_(merged, rows.c.edits.is_(False))
    query = select(
        rows.c.grouping,
        rows.c.key,
        func.count(),
        _count(rows.c.state == FixState.OPEN.value),
        _count(unchanged),
        _count(and_(merged, rows.c.edits.is_(True))),
        _count(and_(merged, rows.c.edits.is_(None))),
        _count(rows.c.state == FixState.CLOSED.value),
        _count(rows.c.state == FixState.SUPERSEDED.value),
        _count(reverted),
        _count(and_(unchanged, ~reverted)),
    ).group_by(rows.c.grouping, rows.c.key)
    return {
        (str(grouping), str(key)): _outcomes(str(key), counts)
        for grouping, key, *counts in session.execute(query).all()
    }


def medians_to_verified(session: Session) -> dict[tuple[str, str], float]:
    """Median seconds from the first failure to the first ``fixed`` verdict, per
    ``(grouping, key)``: one query.

    The median in portable SQL: each key's durations numbered in order, then the middle one
    (odd count) or the mean of the middle two (even count).
    """
    rows = keyed(session)
    # Per fix: its first "fixed" verdict, less its first failure (looked up by the runs' index;
    # a join of two grouped subqueries would compare every pair of rows in SQLite).
    failed_at = (
        select(func.min(CiFailure.received_at))
        .select_from(RepairRun)
        .join(CiFailure, CiFailure.id == RepairRun.report_id)
        .where(RepairRun.fix_id == Verification.fix_id)
        .scalar_subquery()
    )
    took = epoch(session, func.min(Verification.finished_at)) - epoch(session, failed_at)
    per_fix = (
        select(Verification.fix_id, took.label("s"))
        .where(Verification.verdict == Verdict.FIXED.value, Verification.finished_at.is_not(None))
        .group_by(Verification.fix_id)
        .subquery()
    )
    durations = (
        select(rows.c.grouping, rows.c.key, per_fix.c.s)
        .join(per_fix, per_fix.c.fix_id == rows.c.fix_id)
        .subquery()
    )
    group = (durations.c.grouping, durations.c.key)
    ranked = select(
        *group,
        durations.c.s,
        # A fix with no failure recorded has no duration: numbered last, and not counted.
        func.row_number()
        .over(partition_by=group, order_by=durations.c.s.asc().nulls_last())
        .label("rn"),
        func.count(durations.c.s).over(partition_by=group).label("n"),
    ).subquery()
    n = ranked.c.n.cast(Integer)
    middle = (
        select(ranked.c.grouping, ranked.c.key, func.avg(ranked.c.s))
        .where(ranked.c.rn.in_([(n + 1) // 2, (n + 2) // 2]))
        .group_by(ranked.c.grouping, ranked.c.key)
    )
    return {
        (str(grouping), str(key)): float(value)
        for grouping, key, value in session.execute(middle).all()
        if value is not None
    }


def _took(session: Session) -> ColumnElement[Any]:
    return epoch(session, Verification.finished_at) - epoch(session, Verification.started_at)


def _finished() -> ColumnElement[bool]:
    return and_(Verification.started_at.is_not(None), Verification.finished_at.is_not(None))


def device_seconds(session: Session) -> dict[tuple[str, str], dict[str, float]]:
    """Seconds of finished verifications per ``(grouping, key)`` and device: one query."""
    rows = keyed(session, BY_KEY)
    query = (
        select(rows.c.grouping, rows.c.key, Verification.device, func.sum(_took(session)))
        .join(Verification, Verification.fix_id == rows.c.fix_id)
        .where(_finished())
        .group_by(rows.c.grouping, rows.c.key, Verification.device)
    )
    found: dict[tuple[str, str], dict[str, float]] = {}
    for grouping, key, device, total in session.execute(query).all():
        devices = found.setdefault((str(grouping), str(key)), {})
        name = device or UNKNOWN_DEVICE
        devices[name] = devices.get(name, 0.0) + float(total or 0.0)
    return found


def device_times(session: Session) -> list[DeviceTime]:
    """Every finished verification, by device: how many, and how long they took in all."""
    query = (
        select(Verification.device, func.count(Verification.id), func.sum(_took(session)))
        .where(_finished())
        .group_by(Verification.device)
    )
    found: dict[str, DeviceTime] = {}
    for device, count, total in session.execute(query).all():
        name = device or UNKNOWN_DEVICE  # NULL and a device named so are one line
        was = found.get(name, DeviceTime(name, 0, 0.0))
        found[name] = DeviceTime(name, was.verifications + count, was.seconds + float(total or 0))
    return sorted(found.values(), key=lambda d: (-d.seconds, d.device))


def figures(session: Session) -> dict[Grouping, list[Outcomes]]:
    """Each grouping's outcome counts, medians and device time per key, most PRs first.

    The totals are the sums of the signatures' rows (each fix has one signature), which saves
    scanning every fix once more; their median is the database's own.
    """
    found = outcome_counts(session)
    found[("all", "all")] = total_of([o for (g, _), o in found.items() if g == "signature"])
    for where, value in medians_to_verified(session).items():
        if where in found:
            found[where].median_to_verified = value
    for where, devices in device_seconds(session).items():
        if where in found:
            found[where].device_seconds = devices
        if where[0] == "signature":
            for device, seconds in devices.items():
                every = found[("all", "all")].device_seconds
                every[device] = every.get(device, 0.0) + seconds
    ordered = sorted(found.items(), key=lambda item: (-item[1].opened, item[1].key))
    return {g: [o for (grouping, _), o in ordered if grouping == g] for g in GROUPINGS}


def total_of(rows: list[Outcomes]) -> Outcomes:
    """The counts of ``rows`` added up, under the key "all"."""
    total = Outcomes("all")
    for row in rows:
        for name in COUNTS:
            setattr(total, name, getattr(total, name) + getattr(row, name))
    return total


def headline(session: Session) -> Outcomes:
    """The totals over every fix PR (the header of ``/`` shows its landed-unchanged rate)."""
    without_jit(session)
    return outcome_counts(session, ("all",)).get(("all", "all"), Outcomes("all"))


def edited_fixes(session: Session, limit: int = EDITED_LIST) -> list[EditedFix]:
    """The most recently merged fix PRs that a human edited before the merge."""
    rows = session.execute(
        select(Fix.id, Fix.number, Fix.title, Fix.signature, Fix.closed_at)
        .where(Fix.state == FixState.MERGED.value, Fix.merged_with_edits.is_(True))
        .order_by(Fix.id.desc())
        .limit(limit)
    ).all()
    return [EditedFix(*row) for row in rows]


def without_jit(session: Session) -> None:
    """On PostgreSQL, no JIT compilation for the rest of this transaction.

    Its row estimate for a set-returning function (100 codemods per fix) makes the planner
    expect millions of rows, so it JIT-compiles the aggregates: measured with 10,000 fixes,
    625 ms of the medians' 724 ms was compiling, for a query that runs in about 100 ms.
    """
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SET LOCAL jit = off"))


def quality(session: Session) -> Quality:
    """Everything ``/quality`` shows."""
    without_jit(session)
    grouped = figures(session)
    return Quality(
        total=grouped["all"][0] if grouped["all"] else Outcomes("all"),
        by_signature=grouped["signature"],
        by_codemod=grouped["codemod"],
        devices=device_times(session),
        edited=edited_fixes(session),
    )
