"""The base of a check, in real git repositories: which commit, and its files on disk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixers.check.base_tree import (
    GitTreeError,
    WorkTree,
    default_base,
    materialised,
    resolve_commit,
    without_hook_env,
    work_tree,
)
from fixers.repo.files import list_python_files
from tests.fixers.git_repos import BAD, commit_all, git, worker_repo, write


def test_work_tree_gives_top_and_prefix(tmp_path: Path) -> None:
    repo = worker_repo(tmp_path / "repo")
    assert work_tree(repo) == WorkTree(repo.resolve(), "")
    assert work_tree(repo / "pkg") == WorkTree(repo.resolve(), "pkg/")


def test_outside_a_work_tree_is_an_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(GitTreeError, match="not inside a git work tree"):
        work_tree(plain)
    with pytest.raises(GitTreeError, match="is not a directory"):
        work_tree(tmp_path / "missing")


def test_a_ref_that_looks_like_an_option_is_only_a_name(tmp_path: Path) -> None:
    repo = worker_repo(tmp_path / "repo")
    marker = tmp_path / "ran"
    with pytest.raises(GitTreeError, match="does not name a commit"):
        resolve_commit(repo, f"--output={marker}")
    assert not marker.exists()
    with pytest.raises(GitTreeError, match="'nope' does not name a commit"):
        resolve_commit(repo, "nope")


def test_default_base_is_the_fork_point_of_a_feature_branch(tmp_path: Path) -> None:
    repo = worker_repo(tmp_path / "repo")
    fork = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "switch", "--quiet", "-c", "feature")
    write(repo, "pkg/new.py", BAD.format(name="NewWorker"))
    commit_all(repo, "feature work")
    git(repo, "switch", "--quiet", "main")
    write(repo, "pkg/later.py", "x = 1\n")
    commit_all(repo, "main moves on")
    git(repo, "switch", "--quiet", "feature")
    assert default_base(repo) == (fork, "merge base of HEAD and main")


def test_default_branch_prefers_origin_head_then_master(tmp_path: Path) -> None:
    upstream = worker_repo(tmp_path / "upstream")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", str(upstream), str(clone))
    git(clone, "branch", "--quiet", "-m", "main", "topic")  # no local main any more
    sha, how = default_base(clone)
    assert how == "merge base of HEAD and origin/main"
    assert sha == git(upstream, "rev-parse", "HEAD").strip()

    legacy = tmp_path / "legacy"
    legacy.mkdir()
    git(legacy, "init", "--quiet", "--initial-branch=master")
    write(legacy, "a.py", "x = 1\n")
    commit_all(legacy)
    assert default_base(legacy)[1] == "merge base of HEAD and master"


def test_no_default_branch_or_no_commit_says_pass_base(tmp_path: Path) -> None:
    trunk = tmp_path / "trunk"
    trunk.mkdir()
    git(trunk, "init", "--quiet", "--initial-branch=trunk")
    write(trunk, "a.py", "x = 1\n")
    commit_all(trunk)
    with pytest.raises(GitTreeError, match=r"origin/HEAD, main and master do not resolve"):
        default_base(trunk)
    git(trunk, "branch", "main")
    git(trunk, "switch", "--quiet", "--orphan", "empty")
    with pytest.raises(GitTreeError, match="HEAD has no commit yet"):
        default_base(trunk)


def test_materialised_holds_the_commits_python_files_only(tmp_path: Path) -> None:
    repo = worker_repo(tmp_path / "repo")
    write(repo, "README.md", "docs\n")
    base = commit_all(repo)
    (repo / "pkg" / "good.py").write_text("edited in the working tree\n")
    index_before = git(repo, "ls-files", "--stage")
    with materialised(work_tree(repo), base) as root:
        assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")) == [
            "pkg/__init__.py",
            "pkg/base.py",
            "pkg/good.py",
            "pkg/old.py",
        ]
        assert "GoodWorker" in (root / "pkg" / "good.py").read_text()
        assert not (root / "README.md").exists()
        # A git work tree of its own: the sweep lists it as it lists the real one.
        assert list_python_files(root)[1] == "git ls-files"
        scratch = root
    assert not scratch.exists()
    assert git(repo, "ls-files", "--stage") == index_before
    assert len(git(repo, "worktree", "list").splitlines()) == 1


def test_materialised_below_a_prefix(tmp_path: Path) -> None:
    repo = worker_repo(tmp_path / "repo")
    head = git(repo, "rev-parse", "HEAD").strip()
    with materialised(work_tree(repo / "pkg"), head) as root:
        assert root.name == "pkg" and (root / "old.py").is_file()
    with materialised(WorkTree(repo, "not/there/"), head) as root:
        assert root.is_dir() and not any(root.iterdir())


def test_no_filter_driver_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A smudge filter named by the tree's .gitattributes and defined in the user's config
    # is a program: the throwaway repository must never start it.
    repo = worker_repo(tmp_path / "repo")
    marker = tmp_path / "smudged"
    write(repo, ".gitattributes", "*.py filter=evil\n")
    base = commit_all(repo)
    config = tmp_path / "gitconfig"
    config.write_text(f'[filter "evil"]\n\tsmudge = "touch {marker}; cat"\n')
    git(repo, "config", "filter.evil.smudge", f"touch {marker}; cat")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    with materialised(work_tree(repo), base) as root:
        assert (root / "pkg" / "old.py").read_text() == BAD.format(name="OldWorker")
    assert not marker.exists()


def test_without_hook_env_hides_the_hooks_index_and_restores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = worker_repo(tmp_path / "repo")
    git(repo, "rm", "--quiet", "pkg/old.py")
    index = str((repo / ".git" / "index").resolve())
    monkeypatch.setenv("GIT_INDEX_FILE", index)  # what `git commit` gives a pre-commit hook
    head = git(repo, "rev-parse", "HEAD").strip()
    with materialised(work_tree(repo), head) as root:
        leaked = list_python_files(root)[0]
        with without_hook_env():
            assert "GIT_INDEX_FILE" not in os.environ
            listed = list_python_files(root)[0]
    assert "pkg/old.py" not in leaked  # the real index, where old.py is deleted
    assert "pkg/old.py" in listed  # the base's own index
    assert os.environ["GIT_INDEX_FILE"] == index
