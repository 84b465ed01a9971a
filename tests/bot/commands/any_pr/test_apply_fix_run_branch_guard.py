"""``/repairbot apply-fix`` never pushes onto a PR branch whose last N commits are bots': the
maintainer is told why and nothing is pushed (the fake GitHub, real pushes, our database)."""

from __future__ import annotations

import os
import subprocess

import pytest

from bot.git import git
from tests.bot.commands.any_pr.test_apply_fix import FEATURE, _ask, _audit, _work
from tests.bot.commands.test_dispatch_end_to_end import _replies
from tests.bot.conftest import REPO
from tests.fakes.github_git import git_out

HUMAN = {
    "GIT_AUTHOR_NAME": "Alice",
    "GIT_AUTHOR_EMAIL": "alice@example.com",
    "GIT_COMMITTER_NAME": "Alice",
    "GIT_COMMITTER_EMAIL": "alice@example.com",
}
CODEGEN = {
    "GIT_AUTHOR_NAME": "pre-commit-ci[bot]",
    "GIT_AUTHOR_EMAIL": "66853113+pre-commit-ci[bot]@users.noreply.github.com",
    "GIT_COMMITTER_NAME": "pre-commit-ci[bot]",
    "GIT_COMMITTER_EMAIL": "66853113+pre-commit-ci[bot]@users.noreply.github.com",
}


@pytest.fixture
def acme(gh_settings, github_api, target, task_settings):
    """``acme/trt`` with a writer; tasks read ``gh_settings`` (the last 3 commits decide)."""
    settings = task_settings(gh_settings.model_copy(update={"branch_bot_commits_limit": 3}))
    repo, head = target
    repo.permissions.update({"writer": "write"})
    return settings, repo, head


def _commits_on_feature(repo, head: str, tmp_path, authors: list[dict[str, str]]) -> str:
    work = tmp_path / "bot-work"
    subprocess.run(["git", "clone", "--quiet", str(repo.path), str(work)], check=True)
    git(work, "checkout", "--quiet", "-b", FEATURE, head)
    for i, author in enumerate(authors):
        (work / f"formatted_{i}.txt").write_text(f"{i}\n")
        git(work, "add", "--all")
        subprocess.run(  # not bot.git.git: it commits as the bot itself
            ["git", "-C", str(work), "commit", "--quiet", "-m", f"change {i}"],
            env={**os.environ, **author},
            check=True,
        )
    git(work, "push", "--quiet", "origin", f"HEAD:refs/heads/{FEATURE}")
    return git(work, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
def test_a_branch_whose_last_commits_are_bots_is_not_pushed_to(acme, github_api, tmp_path):
    settings, repo, head = acme
    tip = _commits_on_feature(repo, head, tmp_path, [HUMAN, CODEGEN, CODEGEN, CODEGEN])
    number = github_api.open_pull(REPO, head=FEATURE, title="[None][feat] a feature")
    _ask(settings, github_api, number)
    assert _work(settings) == ["refused"]
    assert git_out(repo.path, "rev-parse", f"refs/heads/{FEATURE}").strip() == tip
    [reply] = _replies(repo, number)
    assert f"the last 3 commits on branch `{REPO}:{FEATURE}` are all by bots" in reply
    assert "pre-commit-ci[bot]" in reply and "nothing was pushed" in reply
    assert _audit(settings) == [("writer", "apply-fix", "refused", None)]


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
def test_fewer_bot_commits_than_n_still_get_the_fix(acme, github_api, tmp_path):
    settings, repo, head = acme
    _commits_on_feature(repo, head, tmp_path, [HUMAN, CODEGEN, CODEGEN])  # a human's third
    number = github_api.open_pull(REPO, head=FEATURE, title="[None][feat] a feature")
    _ask(settings, github_api, number)
    assert _work(settings) == ["accepted"]
