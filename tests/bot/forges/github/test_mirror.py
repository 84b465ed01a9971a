"""Pushing onto someone's branch (``push_onto``): a fast-forward from the commit the bot started
from, refused whenever the branch is elsewhere — ahead, rewritten or rewound — with real git
repositories behind a ``file://`` remote."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from bot.forges.github.mirror import BranchMoved, PushRejected, push_branch, push_onto, sync_mirror
from bot.git import commit_all, git, resolve_commit
from tests.conftest import make_settings

REPO = "acme/trt"


@pytest.fixture
def remote(tmp_path):
    """``acme/trt`` as a bare repository with ``feature`` two commits deep, a mirror of it, and
    settings whose git URL template points there."""
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "--quiet", "--initial-branch", "feature")
    (work / "a.py").write_text("a = 1\n")
    first = commit_all(work, "first")
    (work / "a.py").write_text("a = 2\n")
    second = commit_all(work, "second")
    bare = tmp_path / "github" / f"{REPO}.git"
    bare.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "--quiet", "--bare", str(work), str(bare)], check=True)
    mirror = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "--quiet", "--mirror", str(bare), str(mirror)], check=True)
    (work / "a.py").write_text("a = 3\n")
    ours = commit_all(work, "the bot's fix")  # a child of ``second``
    git(work, "push", "--quiet", str(mirror), f"{ours}:refs/fixes/ours")
    settings = make_settings(
        tmp_path / "data",
        github_git_url_template=f"file://{tmp_path}/github/{{repository}}.git",
    )
    return settings, bare, mirror, work, (first, second, ours)


def _push(settings, mirror, commit, expected):
    push_onto(
        settings, REPO, mirror, branch="feature", commit=commit, expected=expected, token=None
    )


def test_a_branch_still_at_the_expected_commit_fast_forwards(remote):
    settings, bare, mirror, _work, (_first, second, ours) = remote
    _push(settings, mirror, ours, second)
    assert resolve_commit(bare, "refs/heads/feature") == ours


def test_a_branch_that_moved_ahead_is_refused(remote):
    settings, bare, mirror, work, (_first, second, ours) = remote
    git(work, "checkout", "--quiet", "-b", "other", second)
    (work / "b.py").write_text("b = 1\n")
    theirs = commit_all(work, "someone else's push")
    git(work, "push", "--quiet", str(bare), f"{theirs}:refs/heads/feature")
    with pytest.raises(BranchMoved, match="stale info"):
        _push(settings, mirror, ours, second)
    assert resolve_commit(bare, "refs/heads/feature") == theirs


def test_a_branch_rewound_behind_the_fix_is_refused_though_a_plain_push_would_not_be(remote):
    """The author force-pushed ``feature`` back to ``first``: the fix descends from it, so a
    plain (fast-forward) push would bring back the commit they removed. The lease refuses."""
    settings, bare, mirror, _work, (first, second, ours) = remote
    git(bare, "update-ref", "refs/heads/feature", first)
    with pytest.raises(BranchMoved):
        _push(settings, mirror, ours, second)
    assert resolve_commit(bare, "refs/heads/feature") == first
    push_branch(
        settings, REPO, mirror, branch="feature", commit=ours, token=None, force=False
    )  # what the lease guards against: accepted, and ``second`` is back
    assert resolve_commit(bare, "refs/heads/feature") == ours


def test_a_push_the_server_declines_is_a_rejection_with_its_reason(remote):
    settings, bare, mirror, _work, (_first, second, ours) = remote
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'protected branch' >&2\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(PushRejected, match="pre-receive hook declined"):
        _push(settings, mirror, ours, second)
    assert resolve_commit(bare, "refs/heads/feature") == second


def test_a_name_that_is_not_a_repository_pushes_nothing(remote):
    settings, bare, mirror, _work, (_first, second, ours) = remote
    with pytest.raises(Exception, match="not a GitHub repository name"):
        push_onto(
            settings, "../x", mirror, branch="feature", commit=ours, expected=second, token=None
        )
    assert resolve_commit(bare, "refs/heads/feature") == second


def test_workers_syncing_one_new_mirror_at_once_all_get_it(tmp_path):
    """Six tasks of one host fetch the same repository together (the mirror made by the first):
    before ``bot.git.updating`` they collided on ``git init``'s files and on the commit-graph's
    lock, failing every time here."""
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "--quiet", "--initial-branch", "main")
    for number in range(30):  # enough refs that the fetches overlap
        (work / f"m{number}.py").write_text(f"m = {number}\n")
        commit_all(work, f"commit {number}")
        git(work, "branch", f"topic-{number}")
    bare = tmp_path / "github" / f"{REPO}.git"
    bare.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "--quiet", "--bare", str(work), str(bare)], check=True)
    settings = make_settings(
        tmp_path / "data", github_git_url_template=f"file://{tmp_path}/github/{{repository}}.git"
    )
    with ThreadPoolExecutor(6) as pool:
        mirrors = list(pool.map(lambda _: sync_mirror(settings, REPO, None), range(6)))
    assert len(set(mirrors)) == 1
    assert resolve_commit(mirrors[0], "refs/heads/topic-29") == resolve_commit(bare, "main")
