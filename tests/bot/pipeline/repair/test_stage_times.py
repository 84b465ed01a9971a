"""Stage seconds: written into a transition's reason, read back by the bench."""

from __future__ import annotations

import doctest

import pytest

from bot.pipeline.repair import stage_times as stage_times
from bot.pipeline.repair.stage_times import StageClock, parse_stage_seconds


def test_the_module_examples_hold() -> None:
    assert doctest.testmod(stage_times).failed == 0


def test_laps_add_up_per_stage_and_a_summary_starts_afresh() -> None:
    clock = StageClock()
    clock.lap("worktree")
    clock.add({"sweep": 0.25, "fix": 1.5})
    clock.add({"fix": 0.5})
    summary = clock.summary()
    assert summary.startswith("(worktree ") and summary.endswith(", sweep 0.25 s, fix 2.00 s)")
    assert clock.summary() == ""  # what was summarised is not repeated


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        (
            "6 violation(s) at 0123abcd (worktree 0.03 s, import evidence 1.25 s)",
            {"worktree": 0.03, "import evidence": 1.25},
        ),
        ("fix #3 on repairbot/x/abc (publish 0.05 s)", {"publish": 0.05}),
        ("fix #3 on repairbot/x/abc", {}),
        ("classes named in the log (Eagle, MTP)", {}),  # parentheses, but no seconds
        ("(sweep 0.02 s) and then some text", {}),  # only a summary at the end counts
        ("", {}),
    ],
)
def test_seconds_are_read_back_from_the_end_of_a_reason(
    reason: str, expected: dict[str, float]
) -> None:
    assert parse_stage_seconds(reason) == expected


def test_a_summary_reads_back_as_what_was_recorded() -> None:
    clock = StageClock({"base check": 0.004, "publish": 0.061})
    assert parse_stage_seconds(f"fix #1 on b {clock.summary()}") == {
        "base check": 0.0,
        "publish": 0.06,
    }
