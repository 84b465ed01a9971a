"""Webhook payloads → small typed events (sans I/O). A payload missing what a handler needs
parses to None: the delivery is kept and marked ignored, never half-acted on."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from bot.config import Settings


class PayloadError(ValueError):
    """A stored delivery body that is not a GitHub payload."""


def load_payload(body: bytes) -> dict[str, Any]:
    """The JSON object of a delivery body (JSON or form-encoded ``payload=``)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PayloadError(f"body is not UTF-8 (byte {exc.start})") from exc
    if text.startswith("payload="):
        text = parse_qs(text, max_num_fields=100).get("payload", [""])[0]
    try:
        payload = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise PayloadError(f"body is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise PayloadError("payload is not a JSON object")
    return payload


def is_bot_account(settings: Settings, login: str, user_type: str = "") -> bool:
    """Whether ``login`` (of ``user_type``, when the payload says) is a bot account or us: what
    a bot does is never a human's command, decision or PR to check."""
    lowered = login.lower()
    return (
        user_type.lower() == "bot"
        or lowered.endswith("[bot]")
        or lowered == settings.github_bot_login.lower()
    )


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _str(data: Any, *path: str) -> str | None:
    value = _get(data, *path)
    return value if isinstance(value, str) else None


def _int(data: Any, *path: str) -> int | None:
    value = _get(data, *path)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class CommentEvent:
    """An ``issue_comment`` on a pull request."""

    action: str
    repository: str
    number: int
    comment_id: int
    body: str
    login: str
    user_type: str
    pr_author: str = ""  # who opened the PR (``issue.user.login``)
    # GitHub's word for the author's relation to the repository (``comment.author_association``):
    # enough to budget replies to strangers, never to authorise a command (that asks GitHub).
    association: str = "NONE"


def comment_event(payload: dict[str, Any]) -> CommentEvent | None:
    """The comment, when it was made on a pull request and has every field we use."""
    if _get(payload, "issue", "pull_request") is None:
        return None
    fields = (
        _str(payload, "action"),
        _str(payload, "repository", "full_name"),
        _int(payload, "issue", "number"),
        _int(payload, "comment", "id"),
        _str(payload, "comment", "body"),
        _str(payload, "comment", "user", "login"),
    )
    action, repository, number, comment_id, body, login = fields
    if None in fields:
        return None
    assert action and repository and number and comment_id and login and body is not None
    user_type = _str(payload, "comment", "user", "type") or "User"
    pr_author = _str(payload, "issue", "user", "login") or ""
    association = _str(payload, "comment", "author_association") or "NONE"
    return CommentEvent(
        action, repository, number, comment_id, body, login, user_type, pr_author, association
    )


@dataclass(frozen=True)
class PullRequestEvent:
    """A ``pull_request`` event."""

    action: str
    repository: str
    number: int
    url: str
    merged: bool
    head_ref: str
    head_sha: str
    base_ref: str
    merge_commit_sha: str | None
    author: str
    sender: str = ""  # who did it (the one who closed it, for ``closed``)
    labels: tuple[str, ...] | None = None  # the PR's labels after the event (None: not sent)
    label: str | None = None  # the label a ``labeled`` / ``unlabeled`` event added or removed
    base_sha: str | None = None  # the base branch's head when the event was sent


def pull_request_event(payload: dict[str, Any]) -> PullRequestEvent | None:
    """The PR event, when it has every field we use."""
    pull = _get(payload, "pull_request")
    fields = (
        _str(payload, "action"),
        _str(payload, "repository", "full_name"),
        _int(pull, "number"),
        _str(pull, "head", "ref"),
        _str(pull, "head", "sha"),
        _str(pull, "base", "ref"),
    )
    if None in fields:
        return None
    action, repository, number, head_ref, head_sha, base_ref = fields
    assert action and repository and number and head_ref and head_sha and base_ref
    return PullRequestEvent(
        action=action,
        repository=repository,
        number=number,
        url=_str(pull, "html_url") or f"https://github.com/{repository}/pull/{number}",
        merged=_get(pull, "merged") is True,
        head_ref=head_ref,
        head_sha=head_sha,
        base_ref=base_ref,
        merge_commit_sha=_str(pull, "merge_commit_sha"),
        author=_str(pull, "user", "login") or "",
        sender=_str(payload, "sender", "login") or "",
        labels=_labels(_get(pull, "labels")),
        label=_str(payload, "label", "name"),
        base_sha=_str(pull, "base", "sha"),
    )


def _labels(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(name for label in value if isinstance(name := _get(label, "name"), str))


@dataclass(frozen=True)
class CheckFailure:
    """A failed check run or commit status that links a CI build."""

    repository: str
    head_sha: str
    build_url: str
    name: str


def check_run_failure(payload: dict[str, Any]) -> CheckFailure | None:
    """A completed, failed ``check_run`` with a details URL."""
    run = _get(payload, "check_run")
    if _str(run, "status") != "completed" or _str(run, "conclusion") not in (
        "failure",
        "timed_out",
    ):
        return None
    repository, sha, url = (
        _str(payload, "repository", "full_name"),
        _str(run, "head_sha"),
        _str(run, "details_url"),
    )
    if not (repository and sha and url):
        return None
    return CheckFailure(repository, sha, url, _str(run, "name") or "check run")


def status_failure(payload: dict[str, Any]) -> CheckFailure | None:
    """A ``status`` in state failure or error with a target URL."""
    if _str(payload, "state") not in ("failure", "error"):
        return None
    repository, sha, url = (
        _str(payload, "repository", "full_name"),
        _str(payload, "sha"),
        _str(payload, "target_url"),
    )
    if not (repository and sha and url):
        return None
    return CheckFailure(repository, sha, url, _str(payload, "context") or "status")


@dataclass(frozen=True)
class PushEvent:
    """A ``push`` to a branch (or tag) of a repository."""

    repository: str
    ref: str
    before: str
    after: str
    created: bool
    deleted: bool


def push_event(payload: dict[str, Any]) -> PushEvent | None:
    """The push, when it has every field we use."""
    fields = (
        _str(payload, "repository", "full_name"),
        _str(payload, "ref"),
        _str(payload, "before"),
        _str(payload, "after"),
    )
    if None in fields:
        return None
    repository, ref, before, after = fields
    assert repository and ref and before and after
    return PushEvent(
        repository=repository,
        ref=ref,
        before=before,
        after=after,
        created=_get(payload, "created") is True,
        deleted=_get(payload, "deleted") is True,
    )


def changes_base(payload: dict[str, Any]) -> bool:
    """Whether an ``edited`` pull_request event changed the PR's base branch."""
    return isinstance(_get(payload, "changes", "base"), dict)
