"""Retrying GitHub calls the way GitHub asks: ``retry-after``, ``x-ratelimit-reset``, backoff.

``wait_for`` is pure: an error and the time in, how long to wait (or None: do not retry) out.
``call`` runs an operation under that policy; for writes it takes a ``reconcile`` function that
looks for the result of an attempt whose answer was lost (a 502 after GitHub acted), so a retried
POST never creates a second PR or comment.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import requests
from github import GithubException

T = TypeVar("T")
SECONDARY_DEFAULT_WAIT_S = 60.0


@dataclass(frozen=True)
class Wait:
    """How long to wait before the next attempt, and why."""

    seconds: float
    reason: str
    may_have_acted: bool


class RateLimited(RuntimeError):
    """GitHub asked for a wait longer than a worker should sleep; retry the task later."""

    def __init__(self, wait: Wait) -> None:
        super().__init__(f"GitHub asks to wait {wait.seconds:.0f}s ({wait.reason})")
        self.wait = wait


def _header(headers: dict[str, str] | None, name: str) -> str | None:
    return (headers or {}).get(name) or (headers or {}).get(name.lower())


def wait_for(
    status: int | None,
    headers: dict[str, str] | None,
    message: str,
    *,
    now: float,
    attempt: int,
    backoff_s: float,
) -> Wait | None:
    """The wait GitHub's answer asks for before trying again; None when retrying cannot help."""
    retry_after = _header(headers, "retry-after")
    if status in (403, 429) and retry_after is not None:
        try:
            return Wait(max(float(retry_after), 0.0), "retry-after", False)
        except ValueError:
            return Wait(SECONDARY_DEFAULT_WAIT_S, "retry-after (unreadable)", False)
    if status in (403, 429) and _header(headers, "x-ratelimit-remaining") == "0":
        reset = _header(headers, "x-ratelimit-reset")
        if reset is not None and reset.isdigit():
            return Wait(max(int(reset) - now, 0.0) + 1.0, "primary rate limit", False)
    if status in (403, 429) and "rate limit" in message.lower():
        return Wait(SECONDARY_DEFAULT_WAIT_S * 2**attempt, "secondary rate limit", False)
    if status is None or status >= 500:
        return Wait(backoff_s * 2**attempt, f"server error {status or 'no answer'}", True)
    return None


def _describe(exc: Exception) -> tuple[int | None, dict[str, str] | None, str]:
    if isinstance(exc, GithubException):
        data = exc.data if isinstance(exc.data, dict) else {}
        return exc.status, exc.headers, str(data.get("message", ""))
    return None, None, str(exc)


def call(
    operation: Callable[[], T],
    *,
    attempts: int,
    backoff_s: float,
    max_wait_s: float,
    reconcile: Callable[[], T | None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``operation``, retrying as GitHub asks; raise its error when retrying cannot help.

    After an error that may have hidden a success (5xx, a dropped connection), ``reconcile`` is
    asked first; what it finds is returned instead of sending the request again.
    """
    for attempt in range(attempts):
        try:
            return operation()
        except (GithubException, requests.RequestException) as exc:
            status, headers, message = _describe(exc)
            wait = wait_for(
                status, headers, message, now=time.time(), attempt=attempt, backoff_s=backoff_s
            )
            if wait is None or attempt == attempts - 1:
                raise
            if wait.seconds > max_wait_s:
                raise RateLimited(wait) from exc
            sleep(wait.seconds)
            if wait.may_have_acted and reconcile is not None:
                found = reconcile()
                if found is not None:
                    return found
    raise AssertionError("unreachable: the last attempt returns or raises")
