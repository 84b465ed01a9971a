"""GitLab's REST API as the intake reads it: ``PRIVATE-TOKEN``, retries the way GitLab asks.

A 429 is waited out for as long as ``Retry-After`` says (else until ``RateLimit-Reset``, else a
backoff); a 5xx, or no answer at all, is retried with a doubling backoff. A wait longer than
``gitlab_max_wait_s``, or the last attempt failing, raises ``GitLabUnavailable``: the delivery's
task is retried later (``bot.intake.process_delivery``), nothing is recorded meanwhile.
``wait_for`` is pure: an answer and the time in, the wait (or None: do not retry) out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from bot.config import Settings

TRANSIENT = frozenset({500, 502, 503, 504})
MAX_JSON_BYTES = 1 << 20


class GitLabNotConfigured(RuntimeError):
    """No GitLab token: nothing can be fetched from or written to GitLab."""


class GitLabUnavailable(RuntimeError):
    """GitLab kept answering 429 or 5xx (or nothing): retry the whole task later."""


class GitLabRefused(ValueError):
    """GitLab answered something we will not use (a 4xx, not JSON); the message says why."""


def wait_for(
    status: int | None,
    headers: httpx.Headers | dict[str, str],
    *,
    now: float,
    attempt: int,
    backoff_s: float,
) -> float | None:
    """How long to wait before the next attempt; None when retrying cannot help."""
    if status == 429:
        retry_after: str | None = headers.get("retry-after")
        if retry_after is not None and retry_after.strip().isdigit():
            return float(int(retry_after.strip()))
        reset: str | None = headers.get("ratelimit-reset")
        if reset is not None and reset.strip().isdigit():
            return float(max(int(reset.strip()) - now, 0.0) + 1.0)
        return backoff_s * float(2**attempt)
    if status is None or status in TRANSIENT:
        return backoff_s * float(2**attempt)
    return None


def token(settings: Settings) -> str:
    """The configured GitLab token (``GitLabNotConfigured`` when there is none)."""
    if settings.gitlab_token is None:
        raise GitLabNotConfigured("GitLab is not configured: set REPAIRBOT_GITLAB_TOKEN")
    return settings.gitlab_token.get_secret_value()


def headers(settings: Settings) -> dict[str, str]:
    """The headers of an authenticated API request."""
    return {"PRIVATE-TOKEN": token(settings), "User-Agent": "repairbot"}


def client(settings: Settings) -> httpx.Client:
    """An HTTP client for GitLab's API (no redirects: the token stays on GitLab's origin)."""
    return httpx.Client(timeout=settings.gitlab_timeout_s, follow_redirects=False)


@contextmanager
def get(
    http: httpx.Client,
    settings: Settings,
    path: str,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[httpx.Response]:
    """A streamed ``GET {api}{path}`` that has waited out rate limits and server errors; the
    answer is any status below 500 but 429."""
    url = f"{settings.gitlab_api_url}{path}"
    auth = headers(settings)
    attempts = settings.gitlab_retry_attempts
    for attempt in range(attempts):
        try:
            response = http.send(http.build_request("GET", url, headers=auth), stream=True)
        except httpx.TransportError as exc:
            status, answer_headers, why = None, httpx.Headers(), f"no answer ({exc})"
        else:
            if response.status_code != 429 and response.status_code not in TRANSIENT:
                try:
                    yield response
                finally:
                    response.close()
                return
            status, answer_headers = response.status_code, response.headers
            why = f"{status} {response.read()[:200].decode('utf-8', 'replace')}"
            response.close()
        wait = wait_for(
            status,
            answer_headers,
            now=time.time(),
            attempt=attempt,
            backoff_s=settings.gitlab_retry_backoff_s,
        )
        if wait is None or attempt == attempts - 1 or wait > settings.gitlab_max_wait_s:
            raise GitLabUnavailable(f"GET {path}: {why} (attempt {attempt + 1} of {attempts})")
        sleep(wait)
    raise AssertionError("unreachable: the last attempt yields or raises")


def get_json(
    settings: Settings, path: str, *, sleep: Callable[[float], None] = time.sleep
) -> dict[str, Any]:
    """``GET {api}{path}``'s JSON object; ``GitLabRefused`` for a 4xx or anything not JSON."""
    with client(settings) as http, get(http, settings, path, sleep=sleep) as response:
        if response.status_code != 200:
            raise GitLabRefused(f"GET {path} answered {response.status_code}")
        data = bytearray()
        for chunk in response.iter_bytes():
            data += chunk
            if len(data) > MAX_JSON_BYTES:
                raise GitLabRefused(f"GET {path}: an answer over {MAX_JSON_BYTES} bytes")
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise GitLabRefused(f"GET {path}: the API answered no JSON") from exc
    if not isinstance(value, dict):
        raise GitLabRefused(f"GET {path}: the API answered no JSON object")
    return value
