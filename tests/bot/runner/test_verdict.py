"""Verdicts from before/after outcomes: every rule, table-driven."""

from __future__ import annotations

import pytest

from bot.db.models import Verdict
from bot.runner.verdict import compare, outcome_of, overall

COLLECTION_ERROR = {"tests/test_a.py": "error", "tests/test_b.py::t": "passed"}


def _meanings(before, after, targets):
    return {t.test_id: t.meaning for t in compare(before, after, targets)}


def test_collection_error_fixed_is_judged_through_the_tests_that_now_run():
    after = {
        "tests/test_a.py::x": "passed",
        "tests/test_a.py::y": "passed",
        "tests/test_b.py::t": "passed",
    }
    meanings = _meanings(COLLECTION_ERROR, after, ["tests/test_a.py"])
    assert meanings == {
        "tests/test_a.py::x": "fixed",
        "tests/test_a.py::y": "fixed",
        "tests/test_b.py::t": "passing",
    }
    assert overall(compare(COLLECTION_ERROR, after, ["tests/test_a.py"])) is Verdict.FIXED


def test_module_still_not_importable_is_still_failing():
    after = {"tests/test_a.py": "error", "tests/test_b.py::t": "passed"}
    tests = compare(COLLECTION_ERROR, after, ["tests/test_a.py"])
    assert overall(tests) is Verdict.STILL_FAILING


@pytest.mark.parametrize(
    ("before", "after", "targets", "verdict"),
    [
        ({"t::a": "failed"}, {"t::a": "passed"}, ["t::a"], Verdict.FIXED),
        ({"t::a": "failed"}, {"t::a": "failed"}, ["t::a"], Verdict.STILL_FAILING),
        ({"t::a": "passed"}, {"t::a": "passed"}, ["t::a"], Verdict.NOT_REPRODUCED),
        (
            {"t::a": "failed", "t::b": "passed"},
            {"t::a": "passed", "t::b": "failed"},
            ["t::a"],
            Verdict.NEW_FAILURES,
        ),
        (
            {"t::a": "failed", "t::b": "passed"},
            {"t::a": "failed", "t::b": "error"},
            ["t::a"],
            Verdict.NEW_FAILURES,
        ),
        ({"t::a": "failed"}, {"t::a": "passed", "t::c": "skipped"}, ["t::a"], Verdict.FIXED),
        ({"t::a": "failed"}, {}, ["t::a"], Verdict.STILL_FAILING),
    ],
)
def test_verdict_table(before, after, targets, verdict):
    assert overall(compare(before, after, targets)) is verdict


def test_another_root_causes_tests_are_listed_not_addressed_and_never_decide():
    before = {"t::a": "failed", "t::other": "failed"}
    after = {"t::a": "passed", "t::other": "failed"}
    tests = compare(before, after, ["t::a"], others=["t::other", "t::unrun"])
    meanings = {t.test_id: t.meaning for t in tests}
    assert meanings == {"t::a": "fixed", "t::other": "not_addressed", "t::unrun": "not_addressed"}
    assert overall(tests) is Verdict.FIXED
    # Without the scope the same run is red: the other root cause's test counts.
    assert overall(compare(before, after, ["t::a", "t::other"])) is Verdict.STILL_FAILING


def test_another_root_causes_test_the_fix_breaks_is_still_a_new_failure():
    tests = compare({"t::o": "passed"}, {"t::o": "failed"}, [], others=["t::o"])
    assert [t.meaning for t in tests] == ["new_failure"]


def test_outcome_of_a_test_in_a_module_that_did_not_import():
    assert outcome_of("tests/test_a.py::x", COLLECTION_ERROR) == "error"
    assert outcome_of("tests/test_c.py::x", COLLECTION_ERROR) == "not_run"
