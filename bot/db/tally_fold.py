"""Counting changed rows into the dashboard's running totals (``bot.db.records.tallies``).

Triggers mark every fix PR and report that changed (``tally_dirty``). :func:`fold` counts a
batch of them durably: their facts are read, their parts computed (``bot.db.tally_parts``),
and the difference to what they added last time is applied to ``tallies`` in the same
transaction that clears their marks. A page calls :func:`read_totals`, which adds the still
unfolded rows' differences in memory without writing, so what it shows is exact and current
while the reconciler keeps the backlog short.

A fix PR's change can move its reports through the funnel (verified, merged), so its reports
are counted again with it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import Table, and_, delete, func, insert, or_, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from bot.db.models import CiFailure, Fix, RepairRun, Suppression, SuppressionReason, Verdict
from bot.db.models import Verification as VerificationRow
from bot.db.records.tallies import FIX, REPORT, Tally, TallyDirty, TallyPart
from bot.db.session import session_scope
from bot.db.tally_parts import (
    FixFacts,
    Parts,
    ReportFacts,
    VerificationFacts,
    difference,
    fix_parts,
    report_parts,
    summed,
)

Owner = tuple[str, int]  # (kind, id): a fix PR or a report
FOLD_BATCH = 2000
CHANGES = ("changes", "all", "")
PART_KEYS = ("kind", "owner_id", "name", "key", "measure", "count", "seconds")
PART_COLUMNS = ", ".join(
    f'"{key}"' for key in PART_KEYS
)  # the total of folded marks (``data_version``)
PENDING_LIMIT = 500  # a page counts at most this many unfolded rows itself (about 0.15 s)
# pg_try_advisory_xact_lock's key: one fold at a time (two would count a shared report twice).
FOLD_LOCK = 0x7A11E5


@dataclass(frozen=True)
class Totals:
    """Running totals as a page reads them, and how many changes they may still miss."""

    figures: Parts
    behind: int  # unfolded changes beyond what the page counted itself (0: exact)


def _chunks(values: list[int], size: int = 900) -> Iterable[list[int]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _verifications(session: Session, fix_ids: list[int]) -> dict[int, list[VerificationFacts]]:
    found: dict[int, list[VerificationFacts]] = defaultdict(list)
    for chunk in _chunks(fix_ids):
        rows = session.execute(
            select(
                VerificationRow.fix_id,
                VerificationRow.verdict,
                VerificationRow.device,
                VerificationRow.started_at,
                VerificationRow.finished_at,
            ).where(VerificationRow.fix_id.in_(chunk))
        ).all()
        for fix_id, verdict, device, started_at, finished_at in rows:
            found[fix_id].append(VerificationFacts(verdict, device, started_at, finished_at))
    return found


def _first_failures(session: Session, fix_ids: list[int]) -> dict[int, datetime]:
    found: dict[int, datetime] = {}
    for chunk in _chunks(fix_ids):
        rows = session.execute(
            select(RepairRun.fix_id, func.min(CiFailure.received_at))
            .join(CiFailure, CiFailure.id == RepairRun.report_id)
            .where(RepairRun.fix_id.in_(chunk))
            .group_by(RepairRun.fix_id)
        )
        found.update((fix_id, at) for fix_id, at in rows if fix_id is not None)
    return found


def _reverted(session: Session, fix_ids: list[int]) -> set[int]:
    found: set[int] = set()
    for chunk in _chunks(fix_ids):
        found.update(
            session.scalars(
                select(Suppression.fix_id).where(
                    Suppression.reason == SuppressionReason.REVERTED.value,
                    Suppression.fix_id.in_(chunk),
                )
            )
        )
    return found


def fix_facts(session: Session, fix_ids: list[int]) -> dict[int, FixFacts]:
    """The facts of each fix PR of ``fix_ids`` that exists."""
    verifications = _verifications(session, fix_ids)
    failures = _first_failures(session, fix_ids)
    reverted = _reverted(session, fix_ids)
    found: dict[int, FixFacts] = {}
    for chunk in _chunks(fix_ids):
        rows = session.execute(
            select(
                Fix.id,
                Fix.repository,
                Fix.signature,
                Fix.state,
                Fix.created_at,
                Fix.number,
                Fix.merged_with_edits,
                Fix.codemods,
            ).where(Fix.id.in_(chunk))
        ).all()
        for row in rows:
            found[row.id] = FixFacts(
                repository=row.repository,
                signature=row.signature,
                state=row.state,
                created_at=row.created_at,
                number=row.number,
                merged_with_edits=row.merged_with_edits,
                codemods=tuple(str(c) for c in row.codemods or []),
                reverted=row.id in reverted,
                first_failure_at=failures.get(row.id),
                verifications=tuple(verifications.get(row.id, [])),
            )
    return found


def report_facts(session: Session, report_ids: list[int]) -> dict[int, ReportFacts]:
    """The funnel facts of each report of ``report_ids`` that exists."""
    existing: set[int] = set()
    runs: dict[int, list[tuple[str, int | None]]] = defaultdict(list)
    for chunk in _chunks(report_ids):
        existing.update(session.scalars(select(CiFailure.id).where(CiFailure.id.in_(chunk))))
        for report_id, state, fix_id in session.execute(
            select(RepairRun.report_id, RepairRun.state, RepairRun.fix_id).where(
                RepairRun.report_id.in_(chunk)
            )
        ):
            runs[report_id].append((state, fix_id))
    fix_ids = sorted({f for pairs in runs.values() for _, f in pairs if f is not None})
    states: dict[int, str] = {}
    verified: set[int] = set()
    for chunk in _chunks(fix_ids):
        rows = session.execute(select(Fix.id, Fix.state).where(Fix.id.in_(chunk)))
        states.update((fix_id, state) for fix_id, state in rows)
        verified.update(
            session.scalars(
                select(VerificationRow.fix_id).where(
                    VerificationRow.fix_id.in_(chunk),
                    VerificationRow.verdict == Verdict.FIXED.value,
                )
            )
        )
    return {
        report_id: ReportFacts(
            run_states=tuple(state for state, _ in runs[report_id]),
            fix_states=tuple(states[f] for _, f in runs[report_id] if f in states),
            verified=any(f in verified for _, f in runs[report_id]),
        )
        for report_id in report_ids
        if report_id in existing
    }


def _with_their_reports(session: Session, owners: Iterable[Owner]) -> set[Owner]:
    everyone = set(owners)
    fix_ids = sorted(i for kind, i in everyone if kind == FIX)
    for chunk in _chunks(fix_ids):
        everyone.update(
            (REPORT, report_id)
            for report_id in session.scalars(
                select(RepairRun.report_id).where(RepairRun.fix_id.in_(chunk)).distinct()
            )
        )
    return everyone


def current_parts(session: Session, owners: set[Owner]) -> dict[Owner, Parts]:
    """What each owner adds to the totals now (a deleted row adds nothing)."""
    fixes = fix_facts(session, sorted(i for kind, i in owners if kind == FIX))
    reports = report_facts(session, sorted(i for kind, i in owners if kind == REPORT))
    return {
        (kind, i): (
            fix_parts(fixes[i])
            if kind == FIX and i in fixes
            else report_parts(reports[i])
            if kind == REPORT and i in reports
            else {}
        )
        for kind, i in owners
    }


def counted_parts(session: Session, owners: set[Owner]) -> dict[Owner, Parts]:
    """What each owner added to the totals when it was last counted."""
    found: dict[Owner, Parts] = {owner: {} for owner in owners}
    for kind in (FIX, REPORT):
        for chunk in _chunks(sorted(i for k, i in owners if k == kind)):
            rows = session.execute(
                select(
                    TallyPart.owner_id,
                    TallyPart.name,
                    TallyPart.key,
                    TallyPart.measure,
                    TallyPart.count,
                    TallyPart.seconds,
                ).where(TallyPart.kind == kind, TallyPart.owner_id.in_(chunk))
            )
            for owner_id, name, key, measure, count, seconds in rows:
                found[(kind, owner_id)][(name, key, measure)] = (count, seconds)
    return found


def _unfolded(session: Session, limit: int, *, lock: bool) -> dict[Owner, int]:
    query = select(TallyDirty.kind, TallyDirty.owner_id, TallyDirty.marks).order_by(
        TallyDirty.kind, TallyDirty.owner_id
    )
    if lock and session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    return {(kind, i): marks for kind, i, marks in session.execute(query.limit(limit))}


def data_version(session: Session) -> int:
    """Every change the triggers ever marked, folded or not: one statement, reading one row of
    ``tallies`` by its key and the (short) backlog. It moves whenever a watched column of a fix
    PR, verification, run, report or suppression changes."""
    folded = (
        select(Tally.count)
        .where(Tally.name == CHANGES[0], Tally.key == CHANGES[1], Tally.measure == CHANGES[2])
        .scalar_subquery()
    )
    waiting = select(func.coalesce(func.sum(TallyDirty.marks), 0)).scalar_subquery()
    return int(session.scalar(select(func.coalesce(folded, 0) + waiting)) or 0)


def _changes(
    session: Session, marked: Iterable[Owner]
) -> tuple[set[Owner], dict[Owner, Parts], Parts]:
    owners = _with_their_reports(session, marked)
    new = current_parts(session, owners)
    old = counted_parts(session, owners)
    return owners, new, summed(difference(new[o], old[o]) for o in owners)


def read_totals(
    session: Session,
    names: tuple[str, ...],
    limit: int = PENDING_LIMIT,
    since: Mapping[str, str] | None = None,
) -> Totals:
    """The totals named ``names`` (for a name in ``since``, only keys from that one on), the
    unfolded changes (up to ``limit`` rows) counted in memory: exact unless more than ``limit``
    changes wait (``behind`` says how many)."""
    since = since or {}
    wanted = or_(
        Tally.name.in_([n for n in names if n not in since]),
        *(and_(Tally.name == n, Tally.key >= key) for n, key in since.items()),
    )
    rows = session.execute(
        select(Tally.name, Tally.key, Tally.measure, Tally.count, Tally.seconds).where(wanted)
    )
    figures: Parts = {(n, k, m): (c, s) for n, k, m, c, s in rows}
    marked = list(_unfolded(session, limit + 1, lock=False))
    behind = 0
    if len(marked) > limit:
        behind = (session.scalar(select(func.count()).select_from(TallyDirty)) or 0) - limit
        marked = marked[:limit]
    if marked:
        _, _, delta = _changes(session, marked)
        figures = summed(
            [
                figures,
                {
                    f: v
                    for f, v in delta.items()
                    if f[0] in names and (f[0] not in since or f[1] >= since[f[0]])
                },
            ]
        )
    return Totals(figures={f: v for f, v in figures.items() if v != (0, 0.0)}, behind=behind)


def _apply(session: Session, delta: Parts) -> None:
    if not delta:
        return
    dialect = session.get_bind().dialect.name
    upsert = pg_insert if dialect == "postgresql" else sqlite_insert
    rows = [
        {"name": n, "key": k, "measure": m, "count": c, "seconds": s}
        for (n, k, m), (c, s) in sorted(delta.items())  # one order: no deadlock between folds
    ]
    statement = upsert(Tally)
    session.execute(
        statement.on_conflict_do_update(
            index_elements=[Tally.name, Tally.key, Tally.measure],
            set_={
                "count": Tally.count + statement.excluded.count,
                "seconds": Tally.seconds + statement.excluded.seconds,
            },
        ),
        rows,
    )


def _replace_parts(session: Session, new: dict[Owner, Parts]) -> None:
    for kind in (FIX, REPORT):
        for chunk in _chunks(sorted(i for k, i in new if k == kind)):
            session.execute(
                delete(TallyPart).where(TallyPart.kind == kind, TallyPart.owner_id.in_(chunk))
            )
    rows = [
        (kind, i, n, k, m, c, s)
        for (kind, i), parts in new.items()
        for (n, k, m), (c, s) in parts.items()
    ]
    if not rows:
        return
    if session.get_bind().dialect.name == "postgresql":
        # COPY: a fold writes tens of thousands of parts; executemany sends them one by one.
        driver = session.connection().connection.driver_connection
        assert driver is not None
        with (
            driver.cursor() as cursor,
            cursor.copy(f"COPY tally_parts ({PART_COLUMNS}) FROM STDIN") as copy,
        ):
            for row in rows:
                copy.write_row(row)
        return
    table = cast(Table, TallyPart.__table__)
    session.execute(insert(table), [dict(zip(PART_KEYS, row, strict=True)) for row in rows])


def fold(session: Session, batch: int = FOLD_BATCH) -> int:
    """Count up to ``batch`` changed rows into the totals in this transaction; how many were
    folded (0 when none waits, or another fold holds the lock on PostgreSQL)."""
    if session.get_bind().dialect.name == "postgresql" and not session.scalar(
        text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": FOLD_LOCK}
    ):
        return 0
    marked = _unfolded(session, batch, lock=True)
    if not marked:
        return 0
    _, new, delta = _changes(session, marked)
    delta[CHANGES] = (sum(marked.values()), 0.0)  # the marks move here: the version stays
    _apply(session, delta)
    _replace_parts(session, new)
    for kind in (FIX, REPORT):
        for chunk in _chunks(sorted(i for k, i in marked if k == kind)):
            session.execute(
                delete(TallyDirty).where(TallyDirty.kind == kind, TallyDirty.owner_id.in_(chunk))
            )
    if len(marked) >= batch and session.get_bind().dialect.name == "postgresql":
        # A back-fill grows tally_parts by millions of rows between autovacuum's visits; without
        # fresh statistics the planner takes it for empty and scans it whole for each batch.
        session.execute(text("ANALYZE tally_parts, tally_dirty"))
    return len(marked)


def fold_backlog(url: str, *, budget_s: float = 10.0) -> int:
    """Fold batches, each in its own transaction, until none waits or ``budget_s`` is spent
    (the reconciler's turn: a back-filled database catches up over a few turns); how many."""
    folded, started = 0, time.monotonic()
    while time.monotonic() - started < budget_s:
        with session_scope(url) as session:
            done = fold(session)
        folded += done
        if done < FOLD_BATCH:
            break
    return folded
