"""``/quality``: how the bot's fix PRs landed, per signature and per codemod.

Every figure is read from the database's running totals (``bot.db.tally_fold``: kept by
triggers in the database, so every replica shows the same, and a page reads a few hundred rows
however many fix PRs there are). The definitions, as the page states them:

- **opened**: fix PRs the bot opened (a row with a PR number).
- **merged unchanged / after human edits**: merged with the bot's last pushed head, or with a
  head a human moved and whose diff changed files (``bot.pipeline.merge_outcome``; merges of
  the base into the PR, GitHub's "Update branch", are not edits: ``bot.pipeline.human_edits``);
  merges recorded before the heads were kept count as merged, neither of the two.
- **closed unmerged**: closed by someone without merging; **superseded**: closed by the bot
  because another PR fixed the same violations.
- **reverted**: merged, then reverted on the base (a ``reverted`` suppression names the fix).
- **landed unchanged** (the headline): merged unchanged and not reverted ÷ decided (merged,
  closed unmerged or superseded); open PRs are not decided yet.
- **failure → verified fix**: the first failure behind a fix received → the first of its
  verifications that finished with the verdict ``fixed``; the median is read from a histogram
  of buckets 2% wide, so it is within 1% of the exact median (``bot.db.tally_parts``).
- **device-minutes**: started → finished of every finished verification, summed by the device
  the runner recorded (``verifications.device``).

A fix that applied several codemods counts once under each of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.db.models import Fix, FixState
from bot.db.tally_fold import read_totals
from bot.db.tally_parts import DEVICE, TO_VERIFIED, Parts, histogram_median

Grouping = Literal["all", "signature", "codemod"]
GROUPINGS: tuple[Grouping, ...] = ("all", "signature", "codemod")
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
    behind: int = 0  # changes not yet counted in the figures (0: exact)


def _outcomes(key: str, measures: dict[str, tuple[int, float]]) -> Outcomes:
    row = Outcomes(key)
    for name in COUNTS:
        setattr(row, name, measures.get(name, (0, 0.0))[0])
    row.median_to_verified = histogram_median(
        (int(m.removeprefix(TO_VERIFIED)), count)
        for m, (count, _) in measures.items()
        if m.startswith(TO_VERIFIED)
    )
    row.device_seconds = {
        m.removeprefix(DEVICE): seconds
        for m, (_, seconds) in measures.items()
        if m.startswith(DEVICE)
    }
    return row


def grouped(figures: Parts) -> dict[Grouping, list[Outcomes]]:
    """Each grouping's outcomes per key, most PRs first, from the running totals."""
    measures: dict[tuple[str, str], dict[str, tuple[int, float]]] = {}
    for (name, key, measure), value in figures.items():
        if name.startswith("quality:"):
            measures.setdefault((name.removeprefix("quality:"), key), {})[measure] = value
    found: dict[Grouping, list[Outcomes]] = {g: [] for g in GROUPINGS}
    for (grouping, key), values in measures.items():
        if grouping in found:
            found[grouping].append(_outcomes(key, values))
    for rows in found.values():
        rows.sort(key=lambda o: (-o.opened, o.key))
    return found


def device_times(figures: Parts) -> list[DeviceTime]:
    """Every finished verification, by device: how many, and how long they took in all."""
    found = [
        DeviceTime(key, count, seconds)
        for (name, key, _), (count, seconds) in figures.items()
        if name == "device"
    ]
    return sorted(found, key=lambda d: (-d.seconds, d.device))


def headline(figures: Parts) -> Outcomes:
    """The totals over every fix PR (the header of ``/`` shows its landed-unchanged rate)."""
    rows = grouped(figures)["all"]
    return rows[0] if rows else Outcomes("all")


def edited_fixes(session: Session, limit: int = EDITED_LIST) -> list[EditedFix]:
    """The most recently merged fix PRs that a human edited before the merge."""
    rows = session.execute(
        select(Fix.id, Fix.number, Fix.title, Fix.signature, Fix.closed_at)
        .where(Fix.state == FixState.MERGED.value, Fix.merged_with_edits.is_(True))
        .order_by(Fix.id.desc())
        .limit(limit)
    ).all()
    return [EditedFix(*row) for row in rows]


def quality(session: Session) -> Quality:
    """Everything ``/quality`` shows."""
    totals = read_totals(session, ("quality:all", "quality:signature", "quality:codemod", "device"))
    by = grouped(totals.figures)
    return Quality(
        total=by["all"][0] if by["all"] else Outcomes("all"),
        by_signature=by["signature"],
        by_codemod=by["codemod"],
        devices=device_times(totals.figures),
        edited=edited_fixes(session),
        behind=totals.behind,
    )
