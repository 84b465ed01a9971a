"""Leased work dirs: kept while their process lives, pruned (with git's registration) once it died."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from bot.git import fresh_worktree, git
from bot.runner.workdirs import (
    forget_missing_worktrees,
    lease_path,
    leased,
    prune_root,
    worktree_repositories,
)
from tests.bot.runner.conftest import TinyRepo, tiny_repo  # noqa: F401 - the fixture

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from bot.git import fresh_worktree
    from bot.runner.workdirs import leased

    repo, work_dir, commit = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    with leased(work_dir):
        fresh_worktree(repo, work_dir / "after", commit)
        print("ready", flush=True)
        time.sleep(600)
    """
)


def registered(repo: Path) -> list[Path]:
    """The linked worktrees ``repo`` has registered (its main worktree left out)."""
    listing = git(repo, "worktree", "list", "--porcelain")
    paths = [
        Path(line.split(" ", 1)[1]) for line in listing.splitlines() if line.startswith("worktree ")
    ]
    return paths[1:]


def _start_holder(repo: TinyRepo, work_dir: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(repo.path), str(work_dir), repo.base],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[3],
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
    return holder


def test_a_live_run_is_kept_and_a_killed_ones_worktree_is_pruned(tiny_repo, tmp_path):  # noqa: F811
    root = tmp_path / "runs"
    work_dir = root / "verification-1-abc"
    holder = _start_holder(tiny_repo, work_dir)
    try:
        assert prune_root(root, prefixes=["verification-"]) == []
        assert (work_dir / "after").is_dir()
        assert registered(tiny_repo.path) == [work_dir / "after"]
    finally:
        os.kill(holder.pid, signal.SIGKILL)  # what a crash does: no finally runs
        holder.wait(timeout=30)
    assert registered(tiny_repo.path) == [work_dir / "after"]  # the leftover this is about

    assert prune_root(root, prefixes=["verification-"]) == [work_dir]
    assert not work_dir.exists() and not lease_path(work_dir).exists()
    assert registered(tiny_repo.path) == []


def test_a_prune_leaves_other_names_and_symlinks_alone(tiny_repo, tmp_path):  # noqa: F811
    root = tmp_path / "runs"
    other = fresh_worktree(tiny_repo.path, root / "someone-else" / "w", tiny_repo.base)
    (root / "verification-2-link").symlink_to(other)
    assert prune_root(root, prefixes=["verification-"]) == []
    assert other.is_dir() and registered(tiny_repo.path) == [other]


def test_a_registration_whose_directory_was_deleted_is_forgotten(tiny_repo, tmp_path):  # noqa: F811
    gone = fresh_worktree(
        tiny_repo.path, tmp_path / "runs" / "verification-3-x" / "after", tiny_repo.base
    )
    subprocess.run(["rm", "-rf", str(gone.parent)], check=True)
    assert registered(tiny_repo.path) == [gone]
    forget_missing_worktrees(tiny_repo.path)
    assert registered(tiny_repo.path) == []


def test_worktrees_name_their_repository_and_a_lease_ends_with_its_block(tiny_repo, tmp_path):  # noqa: F811
    work_dir = tmp_path / "runs" / "run-4-y"
    with leased(work_dir):
        fresh_worktree(tiny_repo.path, work_dir, tiny_repo.base)
        assert lease_path(work_dir).is_file()
        assert worktree_repositories(work_dir) == {(tiny_repo.path / ".git").resolve()}
        assert prune_root(work_dir.parent, prefixes=["run-"]) == []  # held by this very process
    assert not lease_path(work_dir).exists()
    assert prune_root(work_dir.parent, prefixes=["run-"]) == [work_dir]
    assert registered(tiny_repo.path) == []
