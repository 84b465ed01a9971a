"""Which violations a tree adds relative to a base: the ratchet behind ``repairbot check`` and
the pre-merge contract check.

A violation's identity is its kind, class and file, never its line: lines move with every edit
above them, so comparing lines would report every shifted violation as new.
"""

from __future__ import annotations

from collections.abc import Sequence

from fixers.sweep.violation_types import Violation


def identity(violation: Violation) -> str:
    """``kind:class_qualname:path``, the identity of a violation across commits.

    ``fixes.violation_keys`` stores exactly this string (``bot.db.rows.violation_key``), so the
    format must not change.
    """
    return f"{violation.kind}:{violation.class_qualname}:{violation.path}"


def introduced(base: Sequence[Violation], head: Sequence[Violation]) -> list[Violation]:
    """The violations of ``head`` whose identity ``base`` does not have, in ``head`` order."""
    known = {identity(v) for v in base}
    return [v for v in head if identity(v) not in known]
