"""What one row adds to the running totals, and medians read off the duration histogram: within
1% of the exact median for any durations (hypothesis), the bound the dashboard states."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.dashboard.formatting import median
from bot.db.tally_parts import (
    FixFacts,
    ReportFacts,
    VerificationFacts,
    bucket_middle,
    difference,
    duration_bucket,
    fix_parts,
    histogram_median,
    report_parts,
)

T0 = datetime(2026, 12, 1, tzinfo=UTC)
durations = st.lists(
    st.floats(min_value=-1e6, max_value=1e7, allow_nan=False, allow_infinity=False), min_size=1
)


@given(durations)
def test_the_histogram_median_is_within_one_percent_or_half_a_second(values):
    histogram = Counter(duration_bucket(v) for v in values)
    estimate = histogram_median(histogram.items())
    exact = median(values)
    assert estimate is not None and exact is not None
    assert abs(estimate - exact) <= max(0.01 * abs(exact), 0.5) + 1e-9 or _straddles(values)


def _straddles(values: list[float]) -> bool:
    # An even count whose two middle values lie on either side of zero, or of the one-second
    # bucket: the estimate is the mean of two middles, each within its own bound.
    ordered = sorted(values)
    if len(ordered) % 2:
        return False
    low, high = ordered[len(ordered) // 2 - 1], ordered[len(ordered) // 2]
    for value in (low, high):
        if abs(bucket_middle(duration_bucket(value)) - value) > max(0.01 * abs(value), 0.5):
            return False
    return True


def test_buckets_keep_their_order_and_sign():
    values = [-5000.0, -2.0, -0.5, 0.0, 0.9, 1.0, 1.5, 107.0, 108.0, 86400.0]
    buckets = [duration_bucket(v) for v in values]
    assert buckets == sorted(buckets)
    assert duration_bucket(0.9) == 0 and duration_bucket(-2.0) < 0 < duration_bucket(1.5)
    assert [bucket_middle(duration_bucket(v)) for v in (0.2, -0.2)] == [0.5, -0.5]
    for value in (-5000.0, -1.0, 1.0, 107.0):
        assert bucket_middle(duration_bucket(value)) == pytest.approx(value, rel=0.01)
    assert histogram_median([]) is None


def _fix(**changes: object) -> FixFacts:
    facts = {
        "repository": "acme/trtllm",
        "signature": "contract-forward-override",
        "state": "merged",
        "created_at": T0,
        "number": 7,
        "merged_with_edits": False,
        "codemods": ("rename_forbidden", "add_hook_stub"),
        "reverted": False,
        "first_failure_at": T0,
        "verifications": (
            VerificationFacts(
                "fixed", "H100", T0 + timedelta(seconds=100), T0 + timedelta(seconds=160)
            ),
            VerificationFacts(None, None, T0, None),  # still queued: no verdict, no duration
        ),
    }
    facts.update(changes)
    return FixFacts(**facts)  # type: ignore[arg-type]


def test_a_merged_fix_counts_under_all_its_signature_and_each_codemod():
    parts = fix_parts(_fix())
    for name, key in (
        ("quality:all", "all"),
        ("quality:signature", "contract-forward-override"),
        ("quality:codemod", "rename_forbidden"),
        ("quality:codemod", "add_hook_stub"),
    ):
        assert parts[(name, key, "landed_unchanged")] == (1, 0.0)
        assert parts[(name, key, f"to_verified:{duration_bucket(160.0)}")] == (1, 0.0)
        assert parts[(name, key, "device:H100")] == (1, 60.0)  # one run of 60 s
    assert parts[("verdict", "fixed", "")] == (1, 0.0)
    assert parts[("fix_state", "merged", "")] == (1, 0.0)
    assert parts[("fix_day", "2026-12-01", "merged")] == (1, 0.0)


def test_a_revert_moves_the_fix_from_landed_to_reverted():
    change = difference(fix_parts(_fix(reverted=True)), fix_parts(_fix()))
    assert change == {
        ("quality:all", "all", "landed_unchanged"): (-1, 0.0),
        ("quality:all", "all", "reverted"): (1, 0.0),
        ("quality:signature", "contract-forward-override", "landed_unchanged"): (-1, 0.0),
        ("quality:signature", "contract-forward-override", "reverted"): (1, 0.0),
        ("quality:codemod", "rename_forbidden", "landed_unchanged"): (-1, 0.0),
        ("quality:codemod", "rename_forbidden", "reverted"): (1, 0.0),
        ("quality:codemod", "add_hook_stub", "landed_unchanged"): (-1, 0.0),
        ("quality:codemod", "add_hook_stub", "reverted"): (1, 0.0),
    }


def test_an_unopened_fix_counts_in_the_list_but_not_in_quality():
    parts = fix_parts(_fix(number=None, state="open"))
    assert not [figure for figure in parts if figure[0].startswith("quality:")]
    assert parts[("fix_state", "open", "")] == (1, 0.0)


def test_a_report_counts_once_per_funnel_step_it_reached():
    reached = report_parts(
        ReportFacts(run_states=("unclassified", "pr_opened"), fix_states=("merged",), verified=True)
    )
    assert sorted(key for _, key, _ in reached) == [
        "classified",
        "fixed",
        "merged",
        "received",
        "verified",
    ]
    only_received = report_parts(ReportFacts(("unclassified",), (), False))
    assert list(only_received) == [("funnel", "received", "")]
