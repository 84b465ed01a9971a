"""What each kind of GitHub write sends and how a lost answer is found again: the ``post`` and
``find`` the outbox (``bot.forges.github.outbox``) runs, built from a write's recorded request.

A request is plain JSON (a deferred write keeps it in ``github_writes.request`` until its task
sends it), so every kind is rebuilt here from its fields alone: a comment (``number``, ``body``,
``marked``), a reaction (``number``, ``comment_id``, ``content``), a commit status (``sha``,
``state``, ``context``, ``description``, ``target_url``; ``version``: see
``bot.forges.github.statuses``), a comment's edit (``number``, ``comment_id``, ``body``, ``key``:
the comment's own key, whose marker the text keeps), a PR's closing (``number``).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from bot.forges.github.outbox import Written

if TYPE_CHECKING:
    from github.Repository import Repository

STATUS_DESCRIPTION_MAX = 140
COMMENT_MAX = 65_000
log = logging.getLogger(__name__)
Operations = tuple[Callable[[], Written], Callable[[], Written | None]]
T = TypeVar("T")


class WriteClient(Protocol):
    """What a write needs of the GitHub client (``bot.forges.github.api.GitHubApi`` is one; the
    protocol keeps this module below it instead of importing it back)."""

    def repo(self, repository: str) -> Repository:
        """A handle on ``owner/name``."""

    def is_own_login(self, login: str) -> bool:
        """Whether ``login`` is the bot's own account."""

    def read(self, operation: Callable[[], T]) -> T:
        """Run a read under the retry policy."""


def comment_marker(key: str) -> str:
    """The hidden marker a comment posted under ``key`` carries (found again by it)."""
    return f"<!-- repairbot:{hashlib.sha256(key.encode()).hexdigest()[:16]} -->"


def comment_text(key: str, body: str, marked: bool) -> str:
    """A comment's text as posted: capped, with its marker unless posted exactly as given."""
    return body[:COMMENT_MAX] + (f"\n\n{comment_marker(key)}" if marked else "")


def _comment(api: WriteClient, repository: str, key: str, request: dict[str, Any]) -> Operations:
    number, marked = int(request["number"]), bool(request["marked"])
    text = comment_text(key, str(request["body"]), marked)
    marker = comment_marker(key)

    def ours(body: str) -> bool:
        return marker in body if marked else body.strip() == text.strip()

    def lookup() -> Written | None:
        for comment in api.repo(repository).get_issue(number).get_comments():
            if not ours(comment.body or ""):
                continue
            login = comment.user.login if comment.user else ""
            if api.is_own_login(login):
                return Written(str(comment.id), comment.html_url, fresh=True)
            log.warning(
                "%s#%s: comment %s by %s looks like ours (key %s); ignored",
                repository, number, comment.id, login or "?", key,
            )  # fmt: skip
        return None

    def post() -> Written:
        comment = api.repo(repository).get_issue(number).create_comment(text)
        return Written(str(comment.id), comment.html_url, fresh=True)

    return post, lambda: api.read(lookup)


def _reaction(api: WriteClient, repository: str, key: str, request: dict[str, Any]) -> Operations:
    number, comment_id = int(request["number"]), int(request["comment_id"])

    def post() -> Written:
        issue = api.repo(repository).get_issue(number)
        reaction = issue.get_comment(comment_id).create_reaction(str(request["content"]))
        return Written(str(reaction.id), None, fresh=True)

    return post, lambda: None  # GitHub itself makes a reaction idempotent


def _status(api: WriteClient, repository: str, key: str, request: dict[str, Any]) -> Operations:
    target_url = request.get("target_url")
    description = str(request["description"])[:STATUS_DESCRIPTION_MAX]

    def post() -> Written:
        commit = api.repo(repository).get_commit(str(request["sha"]))
        made = commit.create_status(
            state=str(request["state"]),
            context=str(request["context"]),
            description=description,
            **({"target_url": target_url} if target_url else {}),
        )
        return Written(str(made.id), target_url, fresh=True)

    def lookup() -> Written | None:  # a lost answer: the newest status of its context is ours
        wanted = (str(request["state"]), description, target_url or None)
        for made in api.repo(repository).get_commit(str(request["sha"])).get_statuses():
            if made.context != str(request["context"]):
                continue
            ours = api.is_own_login(made.creator.login if made.creator else "")
            if ours and (made.state, made.description, made.target_url or None) == wanted:
                return Written(str(made.id), target_url, fresh=True)
            return None  # newest first: an older one of ours is not this write's effect
        return None

    return post, lambda: api.read(lookup)


def _comment_edit(
    api: WriteClient, repository: str, key: str, request: dict[str, Any]
) -> Operations:
    number, comment_id = int(request["number"]), int(request["comment_id"])
    text = comment_text(str(request["key"]), str(request["body"]), marked=True)

    def post() -> Written:
        comment = api.repo(repository).get_issue(number).get_comment(comment_id)
        comment.edit(text)
        return Written(str(comment_id), comment.html_url, fresh=True)

    def lookup() -> Written | None:  # a lost answer: the comment says our text already
        comment = api.repo(repository).get_issue(number).get_comment(comment_id)
        if comment.body != text:
            return None
        return Written(str(comment_id), comment.html_url, fresh=True)

    return post, lambda: api.read(lookup)


def _pull_close(api: WriteClient, repository: str, key: str, request: dict[str, Any]) -> Operations:
    number = int(request["number"])

    def post() -> Written:
        pull = api.repo(repository).get_pull(number)
        pull.edit(state="closed")
        return Written(str(number), pull.html_url, fresh=True)

    def lookup() -> Written | None:  # a lost answer: the PR is closed already
        pull = api.repo(repository).get_pull(number)
        return Written(str(number), pull.html_url, fresh=True) if pull.state == "closed" else None

    return post, lambda: api.read(lookup)


_KINDS = {
    "comment": _comment,
    "comment-edit": _comment_edit,
    "pull-close": _pull_close,
    "reaction": _reaction,
    "status": _status,
}


def write_operations(
    api: WriteClient, kind: str, repository: str, key: str, request: dict[str, Any]
) -> Operations:
    """The ``post`` and ``find`` of one write (``ValueError`` for a kind that is not one)."""
    build = _KINDS.get(kind)
    if build is None:
        raise ValueError(f"not a deferrable GitHub write: {kind!r}")
    return build(api, repository, key, request)
