"""Work directories that outlive a crash: leases while in use, pruning of what is left over.

Repairs and verifications check out git worktrees of the target repository under a folder of
ours (``data_dir/worktrees``, the runner dir). A process killed with SIGKILL never runs its
``finally``: its directory stays, and the target repository keeps the worktree registered. So
each work dir is *leased* while in use — an exclusive ``flock`` on ``<dir>.lease`` beside it,
which the kernel releases when the holder dies, however it dies — and a prune removes every
work dir nobody holds, then lets git forget the worktrees that lived there.

The lease file sits beside the directory, not in it: the tests being verified may write in
their run dir, and must not be able to make a live run look abandoned.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from bot.git import git

LEASE_SUFFIX = ".lease"


def lease_path(work_dir: Path) -> Path:
    """The lease file of ``work_dir``: a sibling named ``<dir>.lease``."""
    return work_dir.with_name(work_dir.name + LEASE_SUFFIX)


@contextlib.contextmanager
def _flock(path: Path, *, wait: bool) -> Iterator[bool]:
    """Hold an exclusive flock on ``path`` (created) for the block; yields whether we got it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            # Unlinked while still held, so no one can lock this name's old inode and think the
            # directory abandoned while we are still removing it.
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    finally:
        os.close(fd)


@contextlib.contextmanager
def leased(work_dir: Path) -> Iterator[Path]:
    """Lease ``work_dir`` for the block (its parent is created; the directory is not).

    Names are unique per attempt, so the lease is ours at once; the caller removes the
    directory inside the block.
    """
    work_dir.parent.mkdir(parents=True, exist_ok=True)
    with _flock(lease_path(work_dir), wait=True):
        yield work_dir


def worktree_repositories(work_dir: Path) -> set[Path]:
    """The git directories (common dirs) of the worktrees at ``work_dir`` and one level below.

    A worktree's ``.git`` is a file ``gitdir: <repo>/.git/worktrees/<name>``, and that folder's
    ``commondir`` names the repository's git directory relative to it.
    """
    repos: set[Path] = set()
    for dot_git in (work_dir / ".git", *work_dir.glob("*/.git")):
        if not dot_git.is_file() or dot_git.is_symlink():
            continue
        text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        if not text.startswith("gitdir:"):
            continue
        gitdir = Path(text.removeprefix("gitdir:").strip())
        commondir = gitdir / "commondir"
        if commondir.is_file():
            repos.add((gitdir / commondir.read_text().strip()).resolve())
    return repos


def forget_missing_worktrees(repo: Path) -> None:
    """``git worktree prune``: drop registrations whose directory is gone (safe to repeat)."""
    if repo.is_dir():
        git(repo, "worktree", "prune", check=False)


def prune_root(root: Path, *, prefixes: Iterable[str]) -> list[Path]:
    """Remove the work dirs under ``root`` named ``<prefix>...`` that no live process leases.

    Each removed directory's repositories then forget the worktrees that were in it. Returns
    the directories removed.
    """
    if not root.is_dir():
        return []
    wanted = tuple(prefixes)
    removed: list[Path] = []
    for entry in sorted(root.iterdir()):
        if entry.name.endswith(LEASE_SUFFIX) or not entry.name.startswith(wanted):
            continue
        if entry.is_symlink() or not entry.is_dir():
            continue
        with _flock(lease_path(entry), wait=False) as abandoned:
            if not abandoned:
                continue  # a live run holds it
            repos = worktree_repositories(entry)
            shutil.rmtree(entry, ignore_errors=True)
            for repo in repos:
                forget_missing_worktrees(repo)
            removed.append(entry)
    for lease in root.glob(f"*{LEASE_SUFFIX}"):  # leases whose directory is already gone
        if not lease.with_name(lease.name.removesuffix(LEASE_SUFFIX)).exists():
            with _flock(lease, wait=False):
                pass
    return removed
