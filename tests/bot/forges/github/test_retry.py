"""Rate limits and server errors: waits as GitHub asks, and never a second PR or comment."""

from __future__ import annotations

import pytest
from github import GithubException

from bot.forges.github.forge import GitHubForge
from bot.forges.github.mirror import push_branch, sync_mirror
from bot.forges.github.retry import wait_for
from tests.bot.conftest import REPO


@pytest.mark.parametrize(
    ("status", "headers", "message", "attempt", "expected"),
    [
        (403, {"retry-after": "7"}, "secondary rate limit", 0, (7.0, False)),
        (429, {"retry-after": "0"}, "", 3, (0.0, False)),
        (
            403,
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1100"},
            "API rate limit",
            0,
            (101.0, False),
        ),
        (403, {}, "You have exceeded a secondary rate limit", 1, (120.0, False)),
        (502, {}, "Server Error", 2, (4.0, True)),
        (None, None, "connection reset", 0, (1.0, True)),
        (403, {}, "Resource not accessible by integration", 0, None),
        (422, {}, "Validation Failed", 0, None),
        (404, {}, "Not Found", 0, None),
    ],
)
def test_the_wait_github_asks_for(status, headers, message, attempt, expected):
    wait = wait_for(status, headers, message, now=1000.0, attempt=attempt, backoff_s=1.0)
    assert (None if wait is None else (wait.seconds, wait.may_have_acted)) == expected


@pytest.fixture
def branch(gh_settings, target):
    forge = GitHubForge(gh_settings)
    mirror = sync_mirror(gh_settings, REPO, forge.token())
    push_branch(
        gh_settings,
        REPO,
        mirror,
        branch="repairbot/r/1",
        commit=target[1],
        token=forge.token(),
        force=True,
    )
    return forge


def _open(forge, key="pull:r"):
    return forge.open_pull(REPO, key=key, branch="repairbot/r/1", base="main", title="t", body="b")


def test_secondary_rate_limit_then_502_after_the_fact_gives_one_pr_and_one_comment(
    gh_settings, github_api, branch
):
    github_api.fault("POST", r"/pulls$", retry_after=1)
    github_api.fault("POST", r"/pulls$", status=502, after_effect=True)
    pull = _open(branch)
    assert len(github_api.pulls(REPO)) == 1
    assert [c.status for c in github_api.calls_to("POST", r"/pulls$")] == [403, 502]
    assert github_api.early_retries == []  # the retry waited out retry-after

    number = int(pull.remote_id)
    github_api.fault("POST", r"/comments$", status=502, after_effect=True)
    github_api.fault("POST", r"/comments$", retry_after=1)
    branch.post_comment(None, REPO, number, "verification report", key="c:1")
    assert len(github_api.repos[REPO].comments[number]) == 1
    assert github_api.early_retries == []


def test_primary_rate_limit_waits_for_the_reset(gh_settings, github_api, branch):
    github_api.fault("POST", r"/pulls$", rate_limit_reset_in=1)
    _open(branch)
    assert [c.status for c in github_api.calls_to("POST", r"/pulls$")] == [403, 201]
    assert github_api.early_retries == []


def test_a_502_before_acting_is_retried_and_a_422_is_not(gh_settings, github_api, branch):
    github_api.fault("POST", r"/pulls$", status=503, times=2)
    _open(branch)
    assert [c.status for c in github_api.calls_to("POST", r"/pulls$")] == [503, 503, 201]
    with pytest.raises(GithubException) as refused:
        branch.post_comment(None, REPO, 424242, "x", key="c:missing")
    assert refused.value.status == 404


def test_a_task_that_died_after_posting_finds_its_pr_instead_of_posting_again(
    gh_settings, github_api, target
):
    once = gh_settings.model_copy(update={"github_retry_attempts": 1})
    forge = GitHubForge(once)
    mirror = sync_mirror(once, REPO, forge.token())
    push_branch(
        once,
        REPO,
        mirror,
        branch="repairbot/r/1",
        commit=target[1],
        token=forge.token(),
        force=True,
    )
    github_api.fault("POST", r"/pulls$", status=502, after_effect=True)
    with pytest.raises(GithubException):
        _open(forge)  # the PR exists, the answer was lost, the attempt gave up
    again = _open(GitHubForge(gh_settings))  # the retried task
    assert len(github_api.pulls(REPO)) == 1
    assert again.remote_id == str(github_api.pulls(REPO)[0]["number"])
    assert len(github_api.calls_to("POST", r"/pulls$")) == 1
