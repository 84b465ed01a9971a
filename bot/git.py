"""Thin, typed wrappers over the git command line (no shell; every call has a timeout).

Refs, branch names and SHAs can come from a CI report or a webhook, so every wrapper puts them
after ``--end-of-options`` (git >= 2.24): a value like ``--upload-pack=...`` is then a name that
does not resolve, never an option.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_TIMEOUT_S = 120
_AUTHOR = {
    "GIT_AUTHOR_NAME": "repairbot",
    "GIT_AUTHOR_EMAIL": "repairbot@localhost",
    "GIT_COMMITTER_NAME": "repairbot",
    "GIT_COMMITTER_EMAIL": "repairbot@localhost",
}


class GitError(RuntimeError):
    """A git command failed; the message holds the command and git's own words."""


def git(repo: Path, *args: str, check: bool = True) -> str:
    """Run ``git -C repo args...`` and return its stdout."""
    env = {**os.environ, **_AUTHOR, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
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


def commit_all(worktree: Path, message: str) -> str:
    """Commit every change in ``worktree`` and return the new commit's SHA."""
    git(worktree, "add", "--all")
    git(worktree, "commit", "--quiet", "--no-verify", "-m", message)
    return resolve_commit(worktree, "HEAD")


def set_branch(repo: Path, branch: str, commit: str) -> None:
    """Point ``branch`` at ``commit`` (created or moved)."""
    git(repo, "branch", "--force", "--end-of-options", branch, commit)


def diff(repo: Path, base: str, head: str) -> str:
    """The unified diff from ``base`` to ``head``."""
    return git(repo, "diff", "--no-color", "--end-of-options", base, head)
