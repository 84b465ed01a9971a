"""Violation identity and the violations a tree adds relative to a base (pure)."""

from __future__ import annotations

from dataclasses import replace

from fixers.check.introduced import identity, introduced
from fixers.sweep.violation_types import Violation

_W = Violation(
    kind="forbidden-override",
    contract="SpecWorkerBase",
    path="pkg/w.py",
    line=3,
    class_qualname="W",
    detail="overrides forward",
    fix="rename",
    method="forward",
)


def test_identity_is_the_stored_format() -> None:
    # fixes.violation_keys rows were written in this format: changing it orphans them.
    assert identity(_W) == "forbidden-override:W:pkg/w.py"


def test_identity_ignores_line_and_detail() -> None:
    moved = replace(_W, line=40, detail="other words")
    assert identity(moved) == identity(_W)


def test_identity_separates_kind_class_and_path() -> None:
    others = [
        replace(_W, kind="missing-hook"),
        replace(_W, class_qualname="Outer.W"),
        replace(_W, path="pkg/other.py"),
    ]
    assert len({identity(v) for v in [_W, *others]}) == 4


def test_introduced_keeps_only_new_identities_in_head_order() -> None:
    a = replace(_W, class_qualname="A", path="a.py")
    b = replace(_W, class_qualname="B", path="b.py")
    c = replace(_W, class_qualname="C", path="c.py")
    moved_a = replace(a, line=99)
    assert introduced([a], [c, moved_a, b]) == [c, b]


def test_introduced_against_an_empty_base_is_everything() -> None:
    assert introduced([], [_W]) == [_W]
    assert introduced([_W], []) == []


def test_introduced_keeps_duplicates_of_a_new_identity() -> None:
    # Two head reports with one new identity (e.g. two contracts' views) both stay.
    twin = replace(_W, line=9)
    assert introduced([], [_W, twin]) == [_W, twin]
