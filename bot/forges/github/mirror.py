"""Local bare mirrors of GitHub repositories, and pushing fix branches back.

The remote is ``github_git_url_template`` with ``{repository}`` filled in (by default
``https://github.com/owner/name.git``). The token travels as an HTTP ``Authorization`` header in
git's environment (``GIT_CONFIG_*``), never in the URL or on the command line, so it shows up in
no error message, process list or reflog.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import subprocess
from pathlib import Path

from bot.config import Settings
from bot.git import GIT_TIMEOUT_S, GitError, fetch_mirror, updating

REPOSITORY_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")


def is_github_repository(spec: str | None) -> bool:
    """Whether a report's ``repository`` names a GitHub repository (``owner/name``)."""
    return bool(spec) and REPOSITORY_NAME.match(spec or "") is not None and ".." not in (spec or "")


def remote_url(settings: Settings, repository: str) -> str:
    """The git URL of ``repository``."""
    return settings.github_git_url_template.format(repository=repository)


def _env(token: str | None) -> dict[str, str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    if token:
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        env.update(
            {
                "GIT_CONFIG_COUNT": "1",
                "GIT_CONFIG_KEY_0": "http.extraHeader",
                "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
            }
        )
    return env


def _git(repo: Path, *args: str, token: str | None = None) -> str:
    result = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        env=_env(token),
        check=False,
    )
    if result.returncode != 0:
        message = result.stderr.strip()
        if token:
            message = message.replace(token, "***")
        raise GitError(f"git {args[0]} failed in {repo}: {message}")
    return result.stdout


def sync_mirror(settings: Settings, repository: str, token: str | None) -> Path:
    """A bare mirror of ``repository`` with its branches and PR heads, fetched now."""
    if not is_github_repository(repository):
        raise GitError(f"not a GitHub repository name: {repository!r}")
    path = (settings.github_mirrors_dir / f"{repository}.git").resolve()
    # Path-limited history walks (learned migrations look up the commit that changed a base
    # class) read changed-path Bloom filters from the commit-graph: several times faster on
    # long histories. Incremental (--split): only the commits this fetch brought are added.
    return fetch_mirror(
        path,
        remote_url(settings, repository),
        ["+refs/heads/*:refs/heads/*", "+refs/pull/*/head:refs/pull/*/head"],
        functools.partial(_git, token=token),
        then=[["commit-graph", "write", "--reachable", "--changed-paths", "--split"]],
    )


def push_branch(
    settings: Settings,
    repository: str,
    mirror: Path,
    *,
    branch: str,
    commit: str,
    token: str | None,
    force: bool,
) -> None:
    """Push ``commit`` to ``branch`` on GitHub (``force`` only for branches the bot owns)."""
    refspec = f"{'+' if force else ''}{commit}:refs/heads/{branch}"
    _git(mirror, "push", "--quiet", remote_url(settings, repository), refspec, token=token)
    with updating(mirror):  # a fetch into it may be updating the same ref
        _git(mirror, "update-ref", f"refs/heads/{branch}", commit)


class BranchMoved(GitError):
    """A push refused because the branch is no longer at the commit the bot started from."""


class PushRejected(GitError):
    """A push GitHub refused for another reason (a protected branch, missing permission)."""


# git's words for a ref that is not where the push expected it: the lease failed client-side
# ("stale info"), a plain push would not fast-forward, or the server's compare-and-swap lost a
# race with another push ("failed to update ref", "cannot lock ref ... but expected ...").
_MOVED = ("(stale info)", "(fetch first)", "(non-fast-forward)", "failed to update ref")


def push_onto(
    settings: Settings,
    repository: str,
    mirror: Path,
    *,
    branch: str,
    commit: str,
    expected: str,
    token: str | None,
) -> None:
    """Push ``commit`` (a child of ``expected``) to ``branch`` of ``repository`` only while that
    branch is still at ``expected``: someone's branch is never overwritten.

    The lease makes git refuse the update unless the branch is at ``expected``, even when it
    moved backwards (a plain push would then fast-forward over the author's rewrite); the
    update itself is always a fast-forward, so nothing is ever forced. Raises ``BranchMoved``
    when the branch moved, ``PushRejected`` when GitHub refused otherwise, ``GitError`` when
    git could not talk to it. The mirror's own refs are left alone (``branch`` may be a fork's).
    """
    if not is_github_repository(repository):
        raise GitError(f"not a GitHub repository name: {repository!r}")
    lease = f"--force-with-lease=refs/heads/{branch}:{expected}"
    refspec = f"{commit}:refs/heads/{branch}"
    try:
        _git(
            mirror, "push", "--quiet", lease, remote_url(settings, repository), refspec, token=token
        )
    except GitError as exc:
        message = str(exc)
        if any(words in message for words in _MOVED):
            raise BranchMoved(message) from exc
        if "[rejected]" in message or "[remote rejected]" in message:
            raise PushRejected(message) from exc
        raise
