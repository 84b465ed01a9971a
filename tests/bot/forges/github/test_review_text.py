"""The review's text: markers found again, fences that hold fences, GitHub's size limit."""

from __future__ import annotations

from bot.forges.github.review_text import (
    BODY_MAX,
    MARKER,
    commentable,
    fenced,
    marker,
    read_marker,
    review_body,
    suggestion_comment,
)
from bot.forges.review_plan import PatchBlock, ReviewPlan, Suggestion
from tests.fakes.github_suggestions import suggested_lines

HEAD = "0123456789abcdef0123456789abcdef01234567"


def _plan(patches: int, size: int) -> ReviewPlan:
    blocks = tuple(
        PatchBlock(f"pkg/w{i}.py", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+" + "b" * size + "\n", "m")
        for i in range(patches)
    )
    return ReviewPlan(HEAD, (), blocks, ("`pkg/w.py:1` `W` (transient-state): d — fixed",))


def test_the_marker_is_read_back_and_other_bodies_are_not_ours() -> None:
    body = marker(HEAD, "abc123", "open") + "\nanything"

    found = read_marker(body)

    assert found is not None and (found.head, found.digest, found.state) == (HEAD, "abc123", "open")
    assert read_marker("LGTM") is None and read_marker(None) is None
    assert read_marker(MARKER + "\nno state line") is None


def test_a_fence_is_longer_than_any_run_of_backticks_inside() -> None:
    assert fenced("x\n", "suggestion") == "```suggestion\nx\n```"
    assert fenced('s = "````"\n', "suggestion").startswith("`````suggestion\n")
    assert fenced("", "suggestion") == "```suggestion\n```"  # an empty suggestion deletes
    comment = suggestion_comment(Suggestion("p.py", 3, 4, "```\ninside\n```\n", "why"))
    assert suggested_lines(comment) == ["```", "inside", "```"]


def test_a_body_over_github_s_limit_drops_patches_and_says_so() -> None:
    plan = _plan(patches=5, size=20_000)

    body = review_body(plan, [], "/repairbot")

    assert len(body) <= BODY_MAX
    assert body.startswith(MARKER) and read_marker(body) is not None
    assert body.count("<details>") == 3
    assert "2 more patch(es) left out" in body and "`/repairbot apply-fix`" in body


def test_a_body_that_fits_keeps_every_patch_and_the_apply_hint() -> None:
    body = review_body(_plan(patches=2, size=10), [], "/fixbot")

    assert body.count("<details>") == 2 and "left out" not in body
    assert "`git apply fix.patch`" in body and "`/fixbot apply-fix`" in body


def test_the_commentable_lines_of_a_file_s_patch() -> None:
    patch = "@@ -1,3 +1,4 @@\n a\n+b\n c\n d\n@@ -20 +21,0 @@\n-e\n@@ -40,2 +40,3 @@ def f():\n"

    assert commentable(patch) == [(1, 4), (40, 42)]
    assert commentable(None) is None
