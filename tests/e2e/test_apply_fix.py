"""``/repairbot apply-fix`` end to end: `repairbot serve` with its embedded worker (real processes)
answering signed ``issue_comment`` deliveries, talking to the fake GitHub over HTTP and pushing
over git into its bare repositories — a fork PR without maintainer edits first gets the question
(what would be pushed where), then, confirmed, a PR into the fork; a same-repository PR gets one
commit, and a reader gets a refusal."""

from __future__ import annotations

import time

import pytest

from bot.cli.demo_target import build_target
from fixers.sweep.run import sweep
from tests.fakes.github_api import BOT_LOGIN, TOKEN
from tests.fakes.github_forks import branch_log, fork, open_fork_pull
from tests.fakes.github_git import git_out

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO = "acme/trt"


@pytest.fixture
def service(make_service, github_api, tmp_path):
    source = tmp_path / "target"
    head = build_target(source)
    repo = github_api.create_repo(REPO, source)
    repo.permissions.update({"maintainer": "write", "reader": "read"})
    built = make_service(
        github_api_url=github_api.url,
        github_token=TOKEN,
        github_git_url_template=github_api.git_url_template,
        github_seconds_between_writes="0",
        import_spares="0",
    )
    built.start_api()
    return built, repo, head


def _comment(service, github_api, number: int, text: str, login: str) -> None:
    payload = github_api.comment_event(REPO, number, text, login=login)
    service.webhook("issue_comment", payload, f"apply-{payload['comment']['id']}")


def _reply(
    github_api, number: int, login: str, service, timeout_s: float = 240, count: int = 1
) -> str:
    """The ``count``-th reply to ``login`` on PR ``number``, once it is there."""
    deadline = time.monotonic() + timeout_s
    while True:
        replies = [
            c["body"]
            for c in github_api.repos[REPO].comments[number]
            if c["user"]["login"] == BOT_LOGIN and c["body"].startswith(f"@{login} ")
        ]
        if len(replies) >= count:
            return replies[count - 1]
        assert time.monotonic() < deadline, service.logs()
        time.sleep(0.2)


def test_apply_fix_on_a_fork_a_same_repo_pr_and_from_a_reader(service, github_api, tmp_path):
    built, repo, head = service
    forked = fork(github_api, REPO, "alice")
    git_out(forked.path, "branch", "feature", head)
    from_fork = open_fork_pull(
        github_api, forked, branch="feature", title="[None][feat] x", maintainer_can_modify=False
    )
    git_out(repo.path, "branch", "bob/feature", head)
    same_repo = github_api.open_pull(REPO, head="bob/feature", title="[None][feat] y")

    # A fork that does not allow maintainer edits: nothing of it enters this repository until
    # a maintainer confirms the head they reviewed.
    _comment(built, github_api, from_fork, "/repairbot apply-fix", "maintainer")
    reply = _reply(github_api, from_fork, "maintainer", built)
    assert f"--confirm-fork {head[:12]}" in reply and github_api.pulls("alice/trt") == []
    _comment(
        built,
        github_api,
        from_fork,
        f"/repairbot apply-fix --confirm-fork {head[:12]}",
        "maintainer",
    )
    reply = _reply(github_api, from_fork, "maintainer", built, count=2)
    [opened] = github_api.pulls("alice/trt")
    assert opened["html_url"] in reply, reply
    assert (opened["base"]["ref"], opened["head"]["label"]) == (
        "feature",
        f"acme:repairbot-fork/apply-fix/{from_fork}",
    )
    assert forked.sha("refs/heads/feature") == head

    _comment(built, github_api, same_repo, "/repairbot apply-fix", "maintainer")
    reply = _reply(github_api, same_repo, "maintainer", built)
    assert branch_log(repo, "bob/feature")[1:] == [head], reply
    checkout = tmp_path / "pushed"
    git_out(repo.path, "worktree", "add", "--detach", str(checkout), "refs/heads/bob/feature")
    assert sweep(checkout).violations == []

    _comment(built, github_api, same_repo, "/repairbot apply-fix", "reader")
    assert "has `read` access" in _reply(github_api, same_repo, "reader", built)
    assert len(branch_log(repo, "bob/feature")) == 2
    assert len(github_api.pulls("alice/trt")) == 1
