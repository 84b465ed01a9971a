"""Thin, typed wrappers over the git command line (no shell; every call has a timeout).

Refs, branch names and SHAs can come from a CI report or a webhook, so every wrapper puts them
after ``--end-of-options`` (git >= 2.24): a value like ``--upload-pack=...`` is then a name that
does not resolve, never an option.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

GIT_TIMEOUT_S = 120
_AUTHOR = {
    "GIT_AUTHOR_NAME": "repairbot",
    "GIT_AUTHOR_EMAIL": "repairbot@localhost",
    "GIT_COMMITTER_NAME": "repairbot",
    "GIT_COMMITTER_EMAIL": "repairbot@localhost",
}
# Who the bot's own commits are by (name, email): what the loop guard reads back from history.
BOT_IDENTITY = (_AUTHOR["GIT_AUTHOR_NAME"], _AUTHOR["GIT_AUTHOR_EMAIL"])


class GitError(RuntimeError):
    """A git command failed; the message holds the command and git's own words."""


@contextmanager
def updating(repo: Path) -> Iterator[None]:
    """Hold this host's lock on updating ``repo`` (created, fetched into, its commit-graph
    written) for the block: two workers doing so at once collide on git's own lock files.

    An ``flock`` on ``<repo>.sync-lock`` beside it, kept (removing it would let a newcomer lock
    a new file while another holds the old one); released when its holder dies.
    """
    repo.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(repo.with_name(repo.name + ".sync-lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def fetch_mirror(
    path: Path,
    remote: str,
    refspecs: Sequence[str],
    run: Callable[..., object],
    *,
    then: Sequence[Sequence[str]] = (),
) -> Path:
    """Fetch ``refspecs`` from ``remote`` into the bare mirror at ``path`` (made when missing;
    forced, pruned), then run each git command of ``then`` in it: all while ``updating`` it.
    ``run(repo, *args)`` is the forge's own git, its credentials bound."""
    with updating(path):
        if not (path / "HEAD").exists():
            path.mkdir(parents=True, exist_ok=True)
            run(path, "init", "--quiet", "--bare")
        run(path, "fetch", "--quiet", "--prune", "--force", remote, *refspecs)
        for command in then:
            run(path, *command)
    return path


def git(repo: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    """Run ``git -C repo args...`` and return its stdout (``env``: added to the environment)."""
    env = {**os.environ, **_AUTHOR, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(env or {})}
    result = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        env=env,
    )
    if check and result.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed in {repo}: {result.stderr.strip()}")
    return result.stdout


def run_git(
    repo: Path, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``git -C repo args...`` with bytes out and its exit status, for callers that read both
    (``merge-tree``'s conflicts, a blob that may be absent); ``stdin`` is fed to it."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        input=stdin,
        capture_output=True,
        timeout=GIT_TIMEOUT_S,
        env=env,
        check=False,
    )


@contextmanager
def cat_file(repo: Path, blobs: Sequence[str]) -> Iterator[IO[bytes]]:
    """``git cat-file --batch`` answering ``blobs`` in order: header, bytes, newline for each.

    The ids are written from a thread, so that neither pipe can fill while the other waits;
    the process is killed after ``GIT_TIMEOUT_S`` and on the way out.
    """
    process = subprocess.Popen(
        ["git", "-C", str(repo), "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    def feed() -> None:
        try:
            with stdin:
                stdin.write("".join(f"{blob}\n" for blob in blobs).encode())
        except BrokenPipeError:  # git died (or was killed): the reader raises
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    timer = threading.Timer(GIT_TIMEOUT_S, process.kill)
    timer.start()
    feeder.start()
    try:
        yield stdout
    finally:
        timer.cancel()
        if process.poll() is None:
            process.kill()
        process.wait()
        feeder.join()
        stdout.close()


def resolve_commit(repo: Path, ref: str) -> str:
    """The full SHA of ``ref`` in ``repo``."""
    return git(repo, "rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}").strip()


def fresh_worktree(repo: Path, path: Path, commit: str) -> Path:
    """A clean detached worktree of ``repo`` at ``commit`` in ``path`` (replacing any old one)."""
    remove_worktree(repo, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    git(repo, "worktree", "add", "--force", "--detach", "--end-of-options", str(path), commit)
    return path


def remove_worktree(repo: Path, path: Path) -> None:
    """Remove a worktree if it exists (safe to call twice)."""
    git(repo, "worktree", "remove", "--force", str(path), check=False)
    git(repo, "worktree", "prune", check=False)


def commit_all(worktree: Path, message: str, *, at: datetime | None = None) -> str:
    """Commit every change in ``worktree`` and return the new commit's SHA.

    ``at``: the commit's author and committer date. The same changes on the same parent with
    the same message and ``at`` are then the same commit: a publication redone after a crash
    pushes the commit it pushed before (a no-op on GitHub), not a new one.
    """
    git(worktree, "add", "--all")
    dated = None
    if at is not None:
        aware = at if at.tzinfo else at.replace(tzinfo=UTC)  # SQLite hands back naive UTC
        stamp = f"{int(aware.timestamp())} +0000"
        dated = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    git(worktree, "commit", "--quiet", "--no-verify", "-m", message, env=dated)
    return resolve_commit(worktree, "HEAD")


def set_branch(repo: Path, branch: str, commit: str) -> None:
    """Point ``branch`` at ``commit`` (created or moved)."""
    git(repo, "branch", "--force", "--end-of-options", branch, commit)


def diff(repo: Path, base: str, head: str) -> str:
    """The unified diff from ``base`` to ``head``."""
    return git(repo, "diff", "--no-color", "--end-of-options", base, head)


def merge_tree(repo: Path, ours: str, theirs: str) -> tuple[str, bool]:
    """The tree git's merge of commits ``ours`` and ``theirs`` has, and whether it was clean
    (when not, the tree holds the conflict markers).

    Objects only (``merge-tree --write-tree``): no worktree, no index, no hooks. Raises
    ``GitError`` when git refuses the merge (unrelated histories, a missing commit).
    """
    result = run_git(
        repo, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages",
        "--end-of-options", ours, theirs,
    )  # fmt: skip
    tree = result.stdout.split(b"\0", 1)[0].decode("ascii", "replace").strip()
    if result.returncode not in (0, 1) or not tree:
        reason = result.stderr.decode("utf-8", "replace").strip() or "no tree"
        raise GitError(f"git merge-tree {ours} {theirs} failed in {repo}: {reason}")
    return tree, result.returncode == 0
