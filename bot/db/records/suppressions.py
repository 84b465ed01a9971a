"""Suppressions: the human decisions the bot keeps, one row each (see ``models.Suppression``).

Data functions in the style of ``crud``: one session in, no commits. At most one active
suppression per (repository, dedupe key): the partial unique index decides between two
processes that record the same decision at once.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.db.models import Fix, FixState, Suppression, SuppressionReason, utcnow


def active_suppression(session: Session, *, repository: str, dedupe_key: str) -> Suppression | None:
    """The suppression holding these violations in ``repository``, if one is active."""
    return session.scalar(
        select(Suppression).where(
            Suppression.repository == repository,
            Suppression.dedupe_key == dedupe_key,
            Suppression.lifted_at.is_(None),
        )
    )


def suppress(
    session: Session,
    *,
    repository: str,
    dedupe_key: str,
    reason: SuppressionReason,
    decided_by: str,
    fix_id: int | None,
    violation_keys: list[str],
    detail: str = "",
) -> Suppression:
    """Record a decision unless one already holds these violations (then that one is kept)."""
    existing = active_suppression(session, repository=repository, dedupe_key=dedupe_key)
    if existing is not None:
        return existing
    row = Suppression(
        repository=repository,
        dedupe_key=dedupe_key,
        reason=reason.value,
        decided_by=decided_by[:200],
        fix_id=fix_id,
        violation_keys=sorted(violation_keys),
        detail=detail,
    )
    try:
        with session.begin_nested():
            session.add(row)
            session.flush()
    except IntegrityError:  # recorded by another process meanwhile
        found = active_suppression(session, repository=repository, dedupe_key=dedupe_key)
        assert found is not None
        return found
    return row


def lift_suppressions(session: Session, *, fix: Fix, lifted_by: str) -> list[Suppression]:
    """Lift what holds ``fix``'s violations (by its dedupe key); the rows lifted."""
    held = session.scalars(
        select(Suppression).where(
            Suppression.repository == fix.repository,
            Suppression.dedupe_key == fix.dedupe_key,
            Suppression.lifted_at.is_(None),
        )
    ).all()
    now = utcnow()
    for row in held:
        row.lifted_by, row.lifted_at = lifted_by[:200], now
    return list(held)


def merged_fix_with_key(session: Session, *, repository: str, dedupe_key: str) -> Fix | None:
    """Our merged fix for exactly these violations: if they are back, it was reverted."""
    return session.scalar(
        select(Fix)
        .where(
            Fix.repository == repository,
            Fix.dedupe_key == dedupe_key,
            Fix.state == FixState.MERGED.value,
        )
        .order_by(Fix.id.desc())
    )


def suppressions_of(session: Session, fix: Fix) -> list[Suppression]:
    """Every suppression recorded for ``fix``'s violations, newest first (for its page)."""
    return list(
        session.scalars(
            select(Suppression)
            .where(
                Suppression.repository == fix.repository,
                Suppression.dedupe_key == fix.dedupe_key,
            )
            .order_by(Suppression.id.desc())
        )
    )


def held_violations(session: Session, *, repository: str) -> dict[str, Suppression]:
    """``{violation key: the active suppression holding it}`` in ``repository``."""
    rows = session.scalars(
        select(Suppression).where(
            Suppression.repository == repository, Suppression.lifted_at.is_(None)
        )
    ).all()
    return {key: row for row in rows for key in row.violation_keys}
