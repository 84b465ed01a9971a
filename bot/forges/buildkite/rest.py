"""Buildkite's REST API (``REPAIRBOT_BUILDKITE_API_URL``/v2) with its rate limits respected.

Every request carries the API access token as a bearer token. A ``429`` is waited out as long
as Buildkite says: ``Retry-After``, or ``RateLimit-Reset`` / ``RateLimit-User-Reset`` (the
seconds until the organization's or the token user's window resets; both are sent, the longer
one is waited). A ``5xx`` or a dropped connection is retried with a doubling backoff. A wait
longer than ``REPAIRBOT_BUILDKITE_MAX_WAIT_S``, or the last attempt failing, raises
``BuildkiteUnavailable``: the delivery's task is retried later and nothing is lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx
from pydantic import TypeAdapter, ValidationError

from bot.config import Settings

MAX_JSON_BYTES = 16 * 1024 * 1024
RESET_HEADERS = ("retry-after", "ratelimit-reset", "ratelimit-user-reset")
_JSON_OBJECT = TypeAdapter(dict[str, Any])


class BuildkiteNotConfigured(RuntimeError):
    """No API access token: nothing can be fetched from Buildkite."""


class BuildkiteRefused(ValueError):
    """Buildkite refused a request, or answered what we will not use; the message says why."""


class BuildkiteUnavailable(RuntimeError):
    """Buildkite is rate limiting us for longer than a worker waits, or keeps failing: retry
    the work later."""


class BuildkiteGone(BuildkiteRefused):
    """What was asked for is not there (404) or not any more (410); the message says which."""


def wait_for(
    status: int,
    headers: Mapping[str, str],
    *,
    attempt: int,
    backoff_s: float,
    idempotent: bool = True,
) -> float | None:
    """Seconds to wait before trying again after ``status``; None when retrying cannot help.

    A 5xx is retried only for a request that is safe to send twice: after a ``PUT .../rebuild``
    answered 502 the rebuild may have happened, and a second one would be a second build."""
    if status == 429:
        asked = [_seconds(headers.get(name)) for name in RESET_HEADERS]
        known = [seconds for seconds in asked if seconds is not None]
        return max(known) if known else backoff_s * 2.0**attempt
    if status >= 500 and idempotent:
        return backoff_s * 2.0**attempt
    return None


def _seconds(value: str | None) -> float | None:
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None


def client(settings: Settings) -> httpx.Client:
    """An HTTP client on the API, authenticated; redirects are not followed (a redirect would
    carry the token, or a log, somewhere we did not choose)."""
    token = settings.buildkite_api_token
    if token is None:
        raise BuildkiteNotConfigured(
            "REPAIRBOT_BUILDKITE_API_TOKEN is not set (read_builds, read_build_logs)"
        )
    return httpx.Client(
        base_url=settings.buildkite_api_url.rstrip("/"),
        headers={
            "Authorization": f"Bearer {token.get_secret_value()}",
            "User-Agent": "repairbot",
        },
        timeout=settings.buildkite_timeout_s,
        follow_redirects=False,
    )


@contextmanager
def request(
    http: httpx.Client,
    settings: Settings,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[httpx.Response]:
    """The streamed answer to ``method path`` once it is neither a 429 nor a 5xx (closed when
    the block ends); see the module docstring for the waits."""
    attempts, idempotent = settings.buildkite_retry_attempts, method in ("GET", "HEAD")
    for attempt in range(attempts):
        try:
            response = http.send(http.build_request(method, path, headers=headers), stream=True)
        except httpx.TransportError as exc:
            if not idempotent:
                raise BuildkiteRefused(f"{method} {path}: no answer ({exc}); not sent") from exc
            wait, why = settings.buildkite_retry_backoff_s * 2.0**attempt, f"no answer ({exc})"
        else:
            found = wait_for(
                response.status_code,
                response.headers,
                attempt=attempt,
                backoff_s=settings.buildkite_retry_backoff_s,
                idempotent=idempotent,
            )
            if found is None:
                try:
                    yield response
                finally:
                    response.close()
                return
            response.close()
            wait, why = found, f"answered {response.status_code}"
        if attempt == attempts - 1 or wait > settings.buildkite_max_wait_s:
            raise BuildkiteUnavailable(
                f"{method} {path}: Buildkite {why} (attempt {attempt + 1} of {attempts}, "
                f"next wait {wait:.0f}s): left for a later retry"
            )
        sleep(wait)
    raise AssertionError("unreachable: the last attempt yields or raises")


def _answer(method: str, path: str, response: httpx.Response) -> dict[str, Any]:
    """A JSON object answer; the errors named for what they mean."""
    status = response.status_code
    if status in (404, 410):
        raise BuildkiteGone(f"{method} {path}: {status} (not there, or not visible to our token)")
    if status not in (200, 201):
        message = response.read()[:300].decode("utf-8", "replace")
        raise BuildkiteRefused(f"{method} {path}: Buildkite answered {status} {message}")
    data = bytearray()
    for chunk in response.iter_bytes():
        data += chunk
        if len(data) > MAX_JSON_BYTES:
            raise BuildkiteRefused(f"{method} {path}: an answer over {MAX_JSON_BYTES} bytes")
    try:
        return _JSON_OBJECT.validate_json(bytes(data))
    except ValidationError as exc:
        why = exc.errors()[0]["msg"]
        raise BuildkiteRefused(f"{method} {path}: not a JSON object ({why})") from exc


def call_json(
    settings: Settings,
    method: str,
    path: str,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """``method path`` (``GET`` a build, ``PUT`` a rebuild): its JSON object."""
    with (
        client(settings) as http,
        request(http, settings, method, path, sleep=sleep) as response,
    ):
        return _answer(method, path, response)
