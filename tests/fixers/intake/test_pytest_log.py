"""pytest's report lines: section rules (long titles too), summary ids with spaces, sections' ids."""

from __future__ import annotations

import pytest

from fixers.intake.capture import Capture
from fixers.intake.pytest_log import SUMMARY, VERBOSE, Section, section_test_id, section_title


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ("_____________________ test_x[a-b] _____________________", "test_x[a-b]"),
        (
            "_ TestHalo.test_exchange[bilinear-float64-3x3] _",
            "TestHalo.test_exchange[bilinear-float64-3x3]",
        ),
        (
            "_ TestHalo.test_exchange[bilinear-float64-3x3] __",
            "TestHalo.test_exchange[bilinear-float64-3x3]",
        ),
        ("__ test_y[a b - c] __", "test_y[a b - c]"),
        ("_ ERROR at setup of test_loads[tiny] _", "ERROR at setup of test_loads[tiny]"),
        ("___ summary ___", "summary"),  # read as always; it never becomes an id (below)
        ("_ not a test title _", None),
        ("_ _ _ _ _ _ _ _", None),
    ],
)
def test_section_rules_long_titles_included(line, title):
    assert section_title(line) == title


@pytest.mark.parametrize(
    ("line", "test_id", "message"),
    [
        ("FAILED tests/a.py::t - boom", "tests/a.py::t", "boom"),
        (
            "FAILED tests/a.py::t[2 + 2 = 5] - assert 4 == 5",
            "tests/a.py::t[2 + 2 = 5]",
            "assert 4 == 5",
        ),
        (
            "FAILED tests/a.py::t[3-4 - 1-x] - ValueError: x",
            "tests/a.py::t[3-4 - 1-x]",
            "ValueError: x",
        ),
        ("FAILED tests/a.py::C::t[p q]", "tests/a.py::C::t[p q]", None),
        ("ERROR tests/b.py - TypeError: y", "tests/b.py", "TypeError: y"),
    ],
)
def test_summary_ids_keep_their_parameters(line, test_id, message):
    found = SUMMARY.match(line)
    assert found is not None
    assert (found["id"], found["message"]) == (test_id, message)


def test_verbose_lines_keep_their_parameters():
    found = VERBOSE.match("tests/a.py::t[p q] FAILED")
    assert found is not None and found["id"] == "tests/a.py::t[p q]"


def _section(title: str) -> Section:
    return Section(title, None, Capture(keep_tail=True))


def test_a_section_takes_the_summary_id_of_its_own_file():
    summary = {
        "tests/a/test_ops.py::test_op[x]": (None, None, ""),
        "tests/b/test_ops.py::test_op[x]": (None, None, ""),
    }
    text = "tests/b/test_ops.py:3: in test_op\n    run()\nE   boom\n"
    assert (
        section_test_id(_section("test_op[x]"), text, summary, None)
        == "tests/b/test_ops.py::test_op[x]"
    )


def test_a_section_with_no_test_file_has_no_id():
    text = "tests/conftest.py:9: OSError\n/venv/lib/python3.6/site-packages/x.py:1: in f\n"
    assert section_test_id(_section("ERROR at setup of test_r"), text, {}, None) is None
    assert (
        section_test_id(_section("summary"), "ERROR:   py312: commands failed\n", {}, None) is None
    )


def test_a_missing_fixture_names_the_tests_file():
    text = "file /ci/src/tests/test_a.py, line 5\n  def test_x(missing):\nE       fixture 'missing' not found\n"
    assert (
        section_test_id(_section("ERROR at setup of test_x"), text, {}, "/ci/src")
        == "tests/test_a.py::test_x"
    )
