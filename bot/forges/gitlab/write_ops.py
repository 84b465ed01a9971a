"""What each kind of GitLab write sends and how a lost answer is found again: the ``post`` and
``find`` the outbox (``bot.forges.github.outbox``) runs, rebuilt from a write's recorded request
(plain JSON, kept in ``github_writes.request`` while it is deferred).

Kinds: a merge request (``project``, ``source_branch``, ``target_branch``, ``title``,
``description``), found again as the open one from its source branch; a note on a merge request
(``project``, ``iid``, ``body``), found again by its hidden marker and the bot's username; a
commit status (``project``, ``sha``, ``state``, ``name``, ``description``, ``target_url``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gitlab

from bot.config import Settings
from bot.forges.github.outbox import Written
from bot.forges.github.write_ops import comment_marker, comment_text
from bot.forges.gitlab.client import reading, writing

KINDS = ("gitlab-merge-request", "gitlab-note", "gitlab-status")
DESCRIPTION_MAX = 255
# Our statuses' states → GitLab's (GitLab has no "error").
STATES = {"pending": "pending", "success": "success", "failure": "failed", "error": "failed"}
Operations = tuple[Callable[[], Written], Callable[[], Written | None]]


def _merge_request(
    settings: Settings, gl: gitlab.Gitlab, key: str, request: dict[str, Any]
) -> Operations:
    project = gl.projects.get(str(request["project"]), lazy=True)
    branch = str(request["source_branch"])

    def find() -> Written | None:
        for mr in project.mergerequests.list(
            source_branch=branch, state="opened", get_all=False, **reading(settings)
        ):
            return Written(str(mr.iid), mr.web_url, fresh=True)
        return None

    def post() -> Written:
        data = {k: request[k] for k in ("source_branch", "target_branch", "title", "description")}
        try:
            mr = project.mergerequests.create(data, **writing(settings))
        except gitlab.GitlabCreateError as exc:
            found = find() if exc.response_code == 409 else None  # it exists: ours, lost
            if found is None:
                raise
            return found
        return Written(str(mr.iid), mr.web_url, fresh=True)

    return post, find


def _note(settings: Settings, gl: gitlab.Gitlab, key: str, request: dict[str, Any]) -> Operations:
    merge_request = gl.projects.get(str(request["project"]), lazy=True).mergerequests.get(
        int(request["iid"]), lazy=True
    )
    text = comment_text(key, str(request["body"]), marked=True)
    marker = comment_marker(key)

    def find() -> Written | None:
        for note in merge_request.notes.list(get_all=True, **reading(settings)):
            author = (note.author or {}).get("username", "")
            if marker in (note.body or "") and author == settings.gitlab_bot_username:
                return Written(str(note.id), None, fresh=True)
        return None

    def post() -> Written:
        note = merge_request.notes.create({"body": text}, **writing(settings))
        return Written(str(note.id), None, fresh=True)

    return post, find


def _status(settings: Settings, gl: gitlab.Gitlab, key: str, request: dict[str, Any]) -> Operations:
    commit = gl.projects.get(str(request["project"]), lazy=True).commits.get(
        str(request["sha"]), lazy=True
    )
    target_url = request.get("target_url")

    def post() -> Written:
        data = {
            "state": STATES[str(request["state"])],
            "name": str(request["name"]),
            "description": str(request["description"])[:DESCRIPTION_MAX],
            **({"target_url": target_url} if target_url else {}),
        }
        made = commit.statuses.create(data, **writing(settings))
        return Written(str(made.id), target_url, fresh=True)

    return post, lambda: None  # a status set twice is harmless


_BUILDERS = {"gitlab-merge-request": _merge_request, "gitlab-note": _note, "gitlab-status": _status}


def write_operations(
    settings: Settings, gl: gitlab.Gitlab, kind: str, key: str, request: dict[str, Any]
) -> Operations:
    """The ``post`` and ``find`` of one GitLab write (``ValueError`` for another kind)."""
    build = _BUILDERS.get(kind)
    if build is None:
        raise ValueError(f"not a GitLab write: {kind!r}")
    return build(settings, gl, key, request)
