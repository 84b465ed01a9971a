"""The verification's PR comment and status line."""

from __future__ import annotations

from bot.runner.pr_summary import comment_body, status_for


def _body(tests: list[dict[str, str]]) -> str:
    return comment_body(
        verification_id=7, verdict="fixed", state="done", reason="", device="cpu", host="h",
        queue="cpu", requested_queue="cpu", on_requested=True, seconds=1.0, tests=tests,
        flaky=[], problems=[], isolation="bubblewrap",
    )  # fmt: skip


def test_tests_of_other_root_causes_are_counted_as_not_addressed_by_this_pr() -> None:
    body = _body([
        {"test_id": "t::a", "before": "failed", "after": "passed", "meaning": "fixed"},
        {"test_id": "t::b", "before": "failed", "after": "failed", "meaning": "not_addressed"},
    ])  # fmt: skip
    assert (
        "- **Not addressed by this PR:** 1 failing test(s) of the log's other root causes" in body
    )
    assert "| `t::b` | failed | failed | not addressed |" in body
    assert status_for("fixed", "done", "")[0] == "success"


def test_a_comment_without_other_root_causes_does_not_mention_them() -> None:
    body = _body([{"test_id": "t::a", "before": "failed", "after": "passed", "meaning": "fixed"}])
    assert "Not addressed" not in body
