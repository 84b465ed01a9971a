"""Extending our open fix PR stops when another bot has been pushing onto its branch: the last
N commits are bots' with another bot among them, so nothing is pushed and the run ends
``loop_guarded`` with the reason (through the real triage and repair tasks, the fake GitHub)."""

from __future__ import annotations

import os
import subprocess

import pytest

from bot.cli.demo_target import run_tests
from bot.git import commit_all, git
from tests.bot.conftest import REPO
from tests.bot.forges.github.test_publish import LATE, _clone, _repair

CODEGEN = {
    "GIT_AUTHOR_NAME": "codegen[bot]",
    "GIT_AUTHOR_EMAIL": "41898282+codegen[bot]@users.noreply.github.com",
    "GIT_COMMITTER_NAME": "codegen[bot]",
    "GIT_COMMITTER_EMAIL": "41898282+codegen[bot]@users.noreply.github.com",
}


@pytest.fixture
def tasks_use(gh_settings, task_settings):
    """The fake GitHub's settings (the last 3 commits decide), given to the tasks."""
    return task_settings(gh_settings.model_copy(update={"branch_bot_commits_limit": 3}))


def _codegen_pushes(github_api, tmp_path, branch: str, count: int) -> str:
    """Another bot pushes ``count`` commits onto ``branch``; returns the new head."""
    work = _clone(github_api, tmp_path, "codegen")
    git(work, "checkout", "--quiet", branch)
    for i in range(count):
        (work / f"generated_{i}.txt").write_text(f"regenerated {i}\n")
        git(work, "add", "--all")
        subprocess.run(
            ["git", "-C", str(work), "commit", "--quiet", "-m", f"Regenerate {i}"],
            env={**os.environ, **CODEGEN},
            check=True,
        )
    git(work, "push", "--quiet", "origin", f"HEAD:refs/heads/{branch}")
    return git(work, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
def test_no_push_onto_our_branch_after_another_bots_commits(
    tasks_use, github_api, target, tmp_path
):
    _repo, head = target
    first = _repair(tasks_use, run_tests(_clone(github_api, tmp_path, "ci")).console, head, 1)
    assert first.state == "pr_opened", first.reason
    [pull] = github_api.pulls(REPO)
    branch, number = pull["head"]["ref"], pull["number"]
    bot_head = _codegen_pushes(github_api, tmp_path, branch, 2)  # codegen, codegen, our fix

    dev = _clone(github_api, tmp_path, "dev")  # a new violation lands on main: we would extend
    (dev / "legacy_spec" / "late.py").write_text(LATE)
    new_head = commit_all(dev, "Add LateWorker")
    git(dev, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    comments_before = len(github_api.repos[REPO].comments.get(number, []))
    second = _repair(tasks_use, run_tests(dev).console, new_head, 2)

    assert second.state == "loop_guarded", second.reason
    assert f"the last 3 commits on our fix branch `{branch}` are all by bots" in second.reason
    assert "codegen[bot]" in second.reason and "repairbot" in second.reason
    assert github_api.repos[REPO].refresh(number)["head"]["sha"] == bot_head  # nothing pushed
    assert len(github_api.repos[REPO].comments.get(number, [])) == comments_before
    assert len(github_api.pulls(REPO)) == 1
