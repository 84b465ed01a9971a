"""The push loop guard on real git repositories: the last N first-parent commits' authors and
committers decide, someone else's branch refuses a tip of bots (ours included), our own fix
branch refuses only when another bot is among them, and a ref that is not there says so."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bot.forges.branch_guard import bot_of, last_commits, push_refusal
from bot.git import BOT_IDENTITY, GitError, git
from tests.conftest import make_settings

HUMAN = ("Alice", "alice@example.com")
CODEGEN = ("codegen[bot]", "41898282+codegen[bot]@users.noreply.github.com")
NOREPLY_BOT = ("Dependabot", "49699333+dependabot[bot]@users.noreply.github.com")


def _commit(
    repo: Path, author: tuple[str, str], committer: tuple[str, str] | None = None, file="log.txt"
) -> str:
    committer = committer or author
    target = repo / file
    target.write_text((target.read_text() if target.exists() else "") + f"{author[0]}\n")
    git(repo, "add", file)
    who = {
        "GIT_AUTHOR_NAME": author[0],
        "GIT_AUTHOR_EMAIL": author[1],
        "GIT_COMMITTER_NAME": committer[0],
        "GIT_COMMITTER_EMAIL": committer[1],
    }
    # Not bot.git.git: it commits as the bot itself.
    subprocess.run(
        ["git", "-C", str(repo), "commit", "--quiet", "-m", f"by {author[0]}"],
        env={**os.environ, **who},
        check=True,
    )
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "--quiet", "--initial-branch", "main")
    (path / "log.txt").write_text("")
    _commit(path, HUMAN)
    return path


@pytest.fixture
def settings(tmp_path: Path):
    return make_settings(tmp_path / "data", branch_bot_commits_limit=3)


def _refusal(settings, repo: Path, *, own: bool) -> str | None:
    return push_refusal(settings, repo, "HEAD", branch="alice/feature", own_branch=own)


def test_someone_elses_branch_whose_last_n_are_bots_is_refused(settings, repo) -> None:
    for author in (CODEGEN, BOT_IDENTITY, CODEGEN):
        _commit(repo, author)
    refusal = _refusal(settings, repo, own=False)
    assert refusal is not None
    assert "last 3 commits" in refusal and "`alice/feature`" in refusal
    assert "codegen[bot]" in refusal and "repairbot" in refusal
    assert "REPAIRBOT_BRANCH_BOT_COMMITS_LIMIT=3" in refusal


def test_a_human_among_the_last_n_lets_the_push_through(settings, repo) -> None:
    for author in (CODEGEN, CODEGEN, HUMAN, CODEGEN, CODEGEN):
        _commit(repo, author)
    assert _refusal(settings, repo, own=False) is None
    _commit(repo, CODEGEN)  # now the last three are bots'
    assert _refusal(settings, repo, own=False) is not None


def test_fewer_commits_than_n_are_never_refused(settings, tmp_path) -> None:
    path = tmp_path / "young"
    path.mkdir()
    git(path, "init", "--quiet", "--initial-branch", "main")
    (path / "log.txt").write_text("")
    _commit(path, CODEGEN)
    _commit(path, CODEGEN)
    assert _refusal(settings, path, own=False) is None


def test_our_own_branch_expects_our_commits_but_not_another_bots(settings, repo) -> None:
    for _ in range(4):
        _commit(repo, BOT_IDENTITY)
    assert _refusal(settings, repo, own=True) is None  # our fix and its extensions
    assert _refusal(settings, repo, own=False) is not None  # on someone else's: a loop
    _commit(repo, CODEGEN)  # another bot pushes onto our branch: the ping-pong starts
    refusal = _refusal(settings, repo, own=True)
    assert refusal is not None and "our fix branch" in refusal
    _commit(repo, HUMAN)
    assert _refusal(settings, repo, own=True) is None


def test_bots_are_known_by_author_committer_and_noreply_address(settings, repo) -> None:
    _commit(repo, NOREPLY_BOT)
    _commit(repo, HUMAN, committer=("github-actions[bot]", "actions@github.com"))
    _commit(repo, HUMAN)
    human, by_actions, by_dependabot = last_commits(repo, "HEAD", 3)
    assert bot_of(settings, human) is None
    assert bot_of(settings, by_actions) == "github-actions[bot]"
    assert bot_of(settings, by_dependabot) == "Dependabot"


def test_merged_in_base_commits_are_not_the_branchs_own(settings, repo) -> None:
    git(repo, "checkout", "--quiet", "-b", "feature")
    _commit(repo, BOT_IDENTITY)
    git(repo, "checkout", "--quiet", "main")
    for _ in range(3):
        _commit(repo, HUMAN, file="base.txt")
    git(repo, "checkout", "--quiet", "feature")
    _commit(repo, CODEGEN)
    git(repo, "merge", "--quiet", "--no-edit", "main")  # as the bot (bot.git's identity)
    # First parents: our merge, codegen's commit, our fix — all bots, another among them.
    assert [bot_of(settings, c) for c in last_commits(repo, "HEAD", 3)] == [
        "repairbot",
        "codegen[bot]",
        "repairbot",
    ]
    assert _refusal(settings, repo, own=True) is not None


def test_a_ref_that_is_not_there_is_a_clear_error(settings, repo) -> None:
    with pytest.raises(GitError, match="deadbeef"):
        push_refusal(settings, repo, "deadbeef" * 5, branch="x", own_branch=False)
    with pytest.raises(GitError, match="--upload-pack"):
        last_commits(repo, "--upload-pack=touch /tmp/x", 3)
