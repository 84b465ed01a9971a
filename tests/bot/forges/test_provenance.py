"""Provenance on real git repositories: which branches are trusted, what a push may carry (the
base's history and the commits the bot made now, never a commit that merely claims the bot's
identity), PR heads found in a mirror's refs, and a worktree swept under the base's rules."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bot.forges.provenance import (
    ProvenanceRefused,
    branch_tip,
    check_push,
    checked_out_branch,
    foreign_commits,
    is_trusted_branch,
    pulls_at,
    reaches,
    trusted_config,
)
from bot.git import BOT_IDENTITY, commit_all, fresh_worktree, git, remove_worktree

STRANGER = ("Mallory", "mallory@example.invalid")


def _commit_as(repo: Path, who: tuple[str, str], path: str, text: str) -> str:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    git(repo, "add", "--all")
    env = {
        "GIT_AUTHOR_NAME": who[0],
        "GIT_AUTHOR_EMAIL": who[1],
        "GIT_COMMITTER_NAME": who[0],
        "GIT_COMMITTER_EMAIL": who[1],
    }
    # Not bot.git.commit_all: that one commits as the bot itself.
    subprocess.run(
        ["git", "-C", str(repo), "commit", "--quiet", "-m", f"{path} by {who[0]}"],
        env={**os.environ, **env},
        check=True,
    )
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "--quiet", "--initial-branch", "main")
    _commit_as(path, ("Maintainer", "m@example.invalid"), "a.py", "a = 1\n")
    return path


@pytest.mark.parametrize(
    ("name", "patterns", "trusted"),
    [
        ("main", [], True),
        ("release/1.0", [], False),
        ("release/1.0", ["release/*"], True),
        ("feature", ["release/*"], False),
        ("repairbot/fix/abc", ["*"], False),  # our own fix branches are never a base
        ("repairbot-fork/apply-fix/3", ["*"], False),  # a stranger's commits live there
        ("", ["*"], False),
    ],
)
def test_trusted_branches(name: str, patterns: list[str], trusted: bool) -> None:
    assert is_trusted_branch(name, default_branch="main", patterns=patterns) is trusted


def test_branch_tip_names_branches_only(repo: Path) -> None:
    main = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "tag", "v1", main)
    assert branch_tip(repo, "main") == main
    assert branch_tip(repo, "v1") is None  # a tag never passes for a branch
    assert branch_tip(repo, main) is None  # nor a SHA
    assert checked_out_branch(repo) == "main"


def test_a_strangers_commit_is_foreign_even_when_it_claims_the_bots_identity(repo: Path) -> None:
    main = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "--quiet", "-b", "fork")
    forged = _commit_as(repo, BOT_IDENTITY, "evil.py", "import os\n")
    ours = commit_all(repo, "fix") if (repo / "b.py").write_text("b = 2\n") else ""
    assert not reaches(repo, main, forged) and reaches(repo, ours, main)
    assert foreign_commits(repo, ours, trusted=[main], made={ours}) == [forged]
    with pytest.raises(ProvenanceRefused, match=r"1 commit\(s\) are neither on a trusted branch"):
        check_push(repo, ours, trusted=[main], made={ours}, where="acme/trt repairbot/x")
    # What the bot made on top of the trusted tip alone passes.
    git(repo, "checkout", "--quiet", "--detach", main)
    (repo / "c.py").write_text("c = 3\n")
    fixed = commit_all(repo, "fix")
    check_push(repo, fixed, trusted=[main], made={fixed}, where="acme/trt repairbot/x")
    with pytest.raises(ProvenanceRefused):  # no trusted tip: only the bot's commits may go
        check_push(repo, fixed, trusted=[""], made={fixed}, where="x")


def test_pull_heads_are_found_in_a_mirrors_refs(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-ref", "refs/pull/7/head", head)
    git(repo, "update-ref", "refs/pull/7/merge", head)
    git(repo, "update-ref", "refs/pull/12/head", head)
    assert pulls_at(repo, head) == [7, 12]
    assert pulls_at(repo, "0" * 40) == []


def test_a_worktree_is_swept_under_the_trusted_config_and_commits_none_of_it(
    repo: Path, tmp_path: Path
) -> None:
    (repo / ".repairbot.toml").write_text("max_file_bytes = 4096\n")
    trusted = commit_all(repo, "base config")
    git(repo, "checkout", "--quiet", "-b", "pr")
    (repo / ".repairbot.toml").write_text('exclude = ["*"]\nmax_file_bytes = 1\n')
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    head = commit_all(repo, "the PR's own rules")
    worktree = fresh_worktree(repo, tmp_path / "wt", head)
    try:
        with trusted_config(repo, worktree, trusted):
            assert (worktree / ".repairbot.toml").read_text() == "max_file_bytes = 4096\n"
            assert not (worktree / "pyproject.toml").exists()  # the base has none
            (worktree / "a.py").write_text("a = 2\n")
        assert (worktree / ".repairbot.toml").read_text().startswith("exclude")
        assert git(worktree, "status", "--porcelain").split() == ["M", "a.py"]
        with trusted_config(repo, worktree, None):  # no trusted commit: the defaults
            assert not (worktree / ".repairbot.toml").exists()
    finally:
        remove_worktree(repo, worktree)
