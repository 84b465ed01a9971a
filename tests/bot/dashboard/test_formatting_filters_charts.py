"""Pure parts of the dashboard, table-driven: filters, durations, charts, verification results."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from bot.dashboard import charts
from bot.dashboard.filters import FixFilters
from bot.dashboard.formatting import age_text, duration_text, median
from bot.dashboard.highlight import MAX_DIFF_CHARS, highlight_diff, split_files
from bot.dashboard.queries import classes_of
from bot.dashboard.results import test_results as read_results


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, FixFilters()),
        ({"state": "merged", "before": "3"}, FixFilters(state="merged", before=3)),
        ({"state": "<b>", "verdict": "maybe", "before": "-4"}, FixFilters()),
        ({"before": "1e9", "after": "x"}, FixFilters()),
        ({"before": str(2**63)}, FixFilters()),  # no column holds it: the newest page
        ({"before": "9", "after": "4"}, FixFilters(after=4)),  # one direction at a time
        ({"page": "3"}, FixFilters()),  # numbered pages are gone: the newest page
        ({"q": "  x" + "y" * 500}, FixFilters(q="x" + "y" * 199)),
        ({"verdict": "unverified"}, FixFilters(verdict="unverified")),
    ],
)
def test_filters_parse_leniently(params, expected):
    assert FixFilters.from_params(params) == expected


def test_filter_query_keeps_other_filters_and_starts_again_when_one_changes():
    filters = FixFilters(state="open", q="a&b", before=40)
    assert filters.query() == "state=open&q=a%26b&before=40"
    assert filters.query(after=12, before=0) == "state=open&q=a%26b&after=12"
    assert filters.query(state="merged") == "state=merged&q=a%26b"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "—"),
        (-3, "0.0s"),
        (4.24, "4.2s"),
        (42, "42s"),
        (185, "3m 05s"),
        (7800, "2h 10m"),
        (3 * 86400 + 4 * 3600, "3d 4h"),
    ],
)
def test_duration_text(seconds, text):
    assert duration_text(seconds) == text


def test_age_and_median():
    now = datetime(2026, 1, 2, tzinfo=UTC)
    assert age_text(now - timedelta(minutes=5, seconds=3), now) == "5m ago"
    assert age_text(now.replace(tzinfo=None), now) == "just now"  # SQLite's naive UTC
    assert median([]) is None and median([3, 1, 2]) == 2 and median([1, 2, 3, 10]) == 2.5


def test_classes_of_violations():
    assert classes_of(["a.py:1 `A` (forward-override)", "b.py:2 `B` (x)", "c.py:3 `A` (y)"]) == [
        "A",
        "B",
    ]
    # Lines stored since paths became code spans; a path's own backticks never pass for a class.
    assert classes_of(["`a.py:1` `A` (forward-override)", "``p`Q`.py:2`` `B` (x)"]) == ["A", "B"]


def test_time_to_pr_histogram_buckets():
    chart = charts.time_to_pr([1, 5, 15, 45, 45, 45, 9000])
    tips = sorted(bar.tip for bar in chart.bars)
    assert tips == ["10\u201330s: 1 fixes", "30s\u20131m: 3 fixes", "<10s: 2 fixes", ">2h: 1 fixes"]
    tallest = max(chart.bars, key=lambda bar: bar.height)
    assert tallest.tip.startswith("30s") and tallest.y == charts.PLOT_TOP
    assert charts.time_to_pr([]).empty


def test_fixes_per_day_stacks_states():
    day = date(2026, 1, 2)
    chart = charts.fixes_per_day([day], {(day, "open"): 3, (day, "merged"): 1}, ["open", "merged"])
    open_bar, merged_bar = chart.bars
    assert open_bar.height == 3 * merged_bar.height
    assert merged_bar.y + merged_bar.height == pytest.approx(open_bar.y)


def test_verdict_split_pass_rate():
    chart = charts.verdict_split({"fixed": 3, "still_failing": 1}, ["fixed", "still_failing"])
    assert "75%" in [label.text for label in chart.labels]
    assert chart.bars[0].width == pytest.approx(3 * chart.bars[1].width)


@pytest.mark.parametrize(
    ("results", "tests", "expected"),
    [
        (  # the runner's shape
            {
                "tests": [
                    {"test_id": "t::a", "before": "failed", "after": "passed", "meaning": "fixed"}
                ]
            },
            ["t::a"],
            [("t::a", "failed", "passed", "fixed")],
        ),
        (  # a mapping with nested outcomes and no meaning
            {
                "t::a": {
                    "before": {"outcome": "passed"},
                    "after": {"outcome": "error", "log": "boom"},
                }
            },
            [],
            [("t::a", "passed", "error", "new_failure")],
        ),
        (  # before/after maps
            {"before": {"t::a": "failed"}, "after": {"t::a": "failed", "t::b": "passed"}},
            [],
            [("t::a", "failed", "failed", "still_failing"), ("t::b", None, "passed", "passing")],
        ),
        ({}, ["t::a"], [("t::a", None, None, "unknown")]),  # queued: listed, not run
        ("garbage", None, []),
    ],
)
def test_verification_results_are_read_forgivingly(results, tests, expected):
    found = read_results(results, tests)
    assert [(t.nodeid, t.before, t.after, t.change) for t in found] == expected


def test_highlighted_diff_escapes_and_splits_per_file():
    diff = "diff --git a/x.py b/x.py\n-<b>old</b>\n+new\ndiff --git a/y.py b/y.py\n+y\n"
    assert [path for path, _ in split_files(diff)] == ["x.py", "y.py"]
    files, truncated = highlight_diff(diff)
    assert [(f.path, f.added, f.removed) for f in files] == [("x.py", 1, 1), ("y.py", 1, 0)]
    assert "&lt;b&gt;old&lt;/b&gt;" in files[0].html and "<b>" not in files[0].html
    assert not truncated and highlight_diff("+x\n" * MAX_DIFF_CHARS)[1]
