"""The fan-out notice's text: what it says for each state of the fix, and when it changes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.pipeline.fan_out.text import (
    NOTICE_MARKER,
    NoticeFacts,
    body_digest,
    notice_body,
    verification_line,
)

FACTS = NoticeFacts(
    fix_number=12,
    fix_url="https://github.com/acme/trt/pull/12",
    fix_state="open",
    state_reason="",
    base_ref="main",
    contract="SpecWorkerBase",
    forbidden="forward",
    hook="_forward_impl",
    violations=2,
    verification="queued",
)


def test_the_notice_names_the_base_the_fix_pr_the_violations_and_the_verification():
    body = notice_body(FACTS)
    assert body.startswith("### This PR's CI failure comes from the base branch `main`")
    assert "#12 (https://github.com/acme/trt/pull/12)" in body
    assert "`SpecWorkerBase` contract is violated on `main` itself (2 violations" in body
    assert "overrides `forward` instead of implementing `_forward_impl`" in body
    assert "it is open, waiting for review" in body
    assert "**Verification of the fix:** queued" in body
    assert body.rstrip().endswith(NOTICE_MARKER)


@pytest.mark.parametrize(
    ("state", "reason", "says"),
    [
        ("merged", "merged on GitHub", "**has been merged** into `main`. Re-run this PR's"),
        ("closed", "closed on GitHub", "closed without merging: the root cause is still on"),
        ("superseded", "superseded by #40 (u)", "superseded (superseded by #40 (u)): the fix"),
    ],
)
def test_the_notice_follows_the_fix(state, reason, says):
    body = notice_body(replace(FACTS, fix_state=state, state_reason=reason))
    assert says in body
    assert "waiting for review" not in body


def test_one_violation_is_singular():
    assert "(1 violation: a subclass" in notice_body(replace(FACTS, violations=1))


@pytest.mark.parametrize(
    ("state", "verdict", "reason", "line"),
    [
        (None, None, "", "not requested"),
        ("queued", None, "", "queued"),
        ("running", None, "", "running"),
        ("done", "fixed", "", "passed: the failing tests pass with the fix"),
        ("done", "still_failing", "", "done: still failing"),
        ("done", None, "", "done: no verdict"),
        ("error", None, "no worker\nclaimed it", "error: no worker claimed it"),
        ("cancelled", None, "", "cancelled"),
    ],
)
def test_the_verification_in_a_few_words(state, verdict, reason, line):
    assert verification_line(state, verdict, reason) == line


def test_the_digest_changes_with_the_text_only():
    same = body_digest(notice_body(FACTS))
    assert same == body_digest(notice_body(replace(FACTS)))
    assert same != body_digest(notice_body(replace(FACTS, verification="running")))
    assert len(same) == 64
