"""Values from reports reach git only after ``--end-of-options`` (issue 17, row 12): each case
is an option git would otherwise obey, run against a real repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.forges.local.repository import base_ref_problem
from bot.git import (
    GitError,
    commit_all,
    diff,
    fresh_worktree,
    git,
    merge_tree,
    resolve_commit,
    set_branch,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "--quiet", "--initial-branch", "main")
    (path / "a.py").write_text("A = 1\n")
    commit_all(path, "one")
    git(path, "branch", "victim")
    return path


def test_a_diff_base_cannot_make_git_write_a_file(repo, tmp_path):
    planted = tmp_path / "planted.txt"
    with pytest.raises(GitError):
        diff(repo, f"--output={planted}", "HEAD")
    assert not planted.exists()


def test_a_branch_name_cannot_delete_a_branch(repo):
    with pytest.raises(GitError):
        set_branch(repo, "-D", "victim")
    assert resolve_commit(repo, "victim") == resolve_commit(repo, "main")


def test_a_base_ref_must_exist_and_cannot_be_an_option(repo):
    assert base_ref_problem(repo, "--upload-pack=touch pwned") is not None
    assert base_ref_problem(repo, "main") is None
    assert "does not exist" in (base_ref_problem(repo, "no-such-branch") or "")


def test_a_worktree_commit_cannot_be_an_option(repo, tmp_path):
    with pytest.raises(GitError):
        fresh_worktree(repo, tmp_path / "wt", "--no-checkout")


def test_a_merge_tree_commit_cannot_be_an_option(repo, tmp_path):
    planted = tmp_path / "planted.txt"
    with pytest.raises(GitError):
        merge_tree(repo, f"--output={planted}", "main")
    assert not planted.exists()
    assert merge_tree(repo, "main", "victim") == (
        git(repo, "rev-parse", "main^{tree}").strip(),
        True,
    )
