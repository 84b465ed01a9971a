"""Local bare mirrors of GitLab projects, and pushing fix branches back.

The remote is ``gitlab_git_url_template`` with ``{project}`` filled in (by default
``GITLAB_URL/group/name.git``). The token travels as HTTP basic auth in git's environment
(``GIT_CONFIG_*``; GitLab takes any user name with a personal, project or group access token),
never in the URL or on the command line, so it shows up in no error message or process list.
Merge requests' heads are fetched too (``refs/merge-requests/N/head``).
"""

from __future__ import annotations

import base64
import functools
import os
import subprocess
from pathlib import Path

from bot.config import Settings
from bot.forges.gitlab.events import project_path
from bot.git import GIT_TIMEOUT_S, GitError, fetch_mirror, updating


def _git(repo: Path, *args: str, token: str) -> str:
    basic = base64.b64encode(f"oauth2:{token}".encode()).decode()
    env = {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
    }
    result = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        env=env,
        check=False,
    )
    if result.returncode != 0:
        message = result.stderr.strip().replace(token, "***")
        raise GitError(f"git {args[0]} failed in {repo}: {message}")
    return result.stdout


def mirror_path(settings: Settings, project: str) -> Path:
    """Where the bare mirror of ``project`` lives: under GitHub's mirrors' folder (a private
    one: never a report's repository), in ``_gitlab/``, which no GitHub owner can be named."""
    if project_path(project) is None:
        raise GitError(f"not a GitLab project path: {project!r}")
    return (settings.github_mirrors_dir / "_gitlab" / f"{project}.git").resolve()


def sync_mirror(settings: Settings, project: str, token: str) -> Path:
    """A bare mirror of ``project`` with its branches and merge requests' heads, fetched now."""
    return fetch_mirror(
        mirror_path(settings, project),
        settings.gitlab_remote(project),
        ["+refs/heads/*:refs/heads/*", "+refs/merge-requests/*/head:refs/merge-requests/*/head"],
        functools.partial(_git, token=token),
    )


def push_branch(
    settings: Settings, project: str, mirror: Path, *, branch: str, commit: str, token: str
) -> None:
    """Force ``commit`` onto ``branch`` (a branch the bot owns) on GitLab and in the mirror."""
    refspec = f"+{commit}:refs/heads/{branch}"
    _git(mirror, "push", "--quiet", settings.gitlab_remote(project), refspec, token=token)
    with updating(mirror):  # a fetch into it may be updating the same ref
        _git(mirror, "update-ref", f"refs/heads/{branch}", commit, token=token)
