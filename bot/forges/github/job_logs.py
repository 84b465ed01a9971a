"""Downloading a GitHub Actions job's log: API → 302 → signed blob URL, streamed and size-capped.

``GET /repos/{owner}/{repo}/actions/jobs/{id}/logs`` answers with a redirect to a short-lived
signed URL on GitHub's blob storage. The redirect is followed by hand: its target must be an
``https`` URL on an allow-listed host (``REPAIRBOT_GITHUB_ACTIONS_LOG_HOSTS``, subdomains
included) or on the API's own origin (GitHub Enterprise serves logs itself), and our token is
never sent there. Rate limits are GitHub's (``bot.forges.github.retry.wait_for``): a short wait is
slept, a long one raises ``RateLimited`` so the delivery is retried later.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from bot.config import Settings
from bot.forges.github.client import github_session
from bot.forges.github.retry import RateLimited, wait_for

MAX_REDIRECTS = 3
_REDIRECTS = (301, 302, 303, 307, 308)


class LogRefused(ValueError):
    """A job log we will not fetch or keep; the message says why (the delivery is refused)."""


def redirect_problem(url: str, settings: Settings) -> str | None:
    """Why a redirect target may not be fetched, or None when it may."""
    parts = urlsplit(url)
    api = urlsplit(settings.github_api_url)
    host = (parts.hostname or "").lower()
    if parts.username or parts.password:
        return "a redirect with credentials in it"
    if (parts.scheme, parts.netloc.lower()) == (api.scheme, api.netloc.lower()):
        return None
    allowed = [name.lower().strip(".") for name in settings.github_actions_log_hosts]
    if not any(host == name or host.endswith("." + name) for name in allowed):
        return f"a redirect to host {host!r}, which is not an allowed log host"
    if parts.scheme != "https":
        return f"a redirect to a non-https URL ({parts.scheme or 'no scheme'})"
    return None


def _headers(settings: Settings) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {github_session(settings).token()}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
        "User-Agent": "repairbot",
    }


@contextmanager
def _get(
    client: httpx.Client,
    url: str,
    headers: dict[str, str],
    settings: Settings,
    sleep: Callable[[float], None],
) -> Iterator[httpx.Response]:
    """A streamed GET that waits out rate limits and server errors as GitHub asks."""
    for attempt in range(settings.github_retry_attempts):
        response = client.send(client.build_request("GET", url, headers=headers), stream=True)
        if response.status_code < 500 and response.status_code not in (403, 429):
            try:
                yield response
            finally:
                response.close()
            return
        message = response.read()[:4096].decode("utf-8", "replace")
        response.close()
        wait = wait_for(
            response.status_code,
            dict(response.headers),
            message,
            now=time.time(),
            attempt=attempt,
            backoff_s=settings.github_retry_backoff_s,
        )
        if wait is None:
            raise LogRefused(f"GET {url}: {response.status_code} {message[:200]}")
        if (
            attempt == settings.github_retry_attempts - 1
            or wait.seconds > settings.github_max_wait_s
        ):
            raise RateLimited(wait)
        sleep(wait.seconds)
    raise AssertionError("unreachable: the last attempt yields or raises")


def _read_capped(response: httpx.Response, limit: int) -> bytes:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise LogRefused(f"the job log is {int(declared)} bytes, over the {limit}-byte cap")
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > limit:
            raise LogRefused(f"the job log is over the {limit}-byte cap (not stored)")
        chunks.append(chunk)
    return b"".join(chunks)


def job_json(settings: Settings, repository: str, job_id: int) -> dict[str, Any]:
    """``GET /repos/{repository}/actions/jobs/{job_id}``: the job's metadata."""
    url = f"{settings.github_api_url.rstrip('/')}/repos/{repository}/actions/jobs/{job_id}"
    with (
        httpx.Client(timeout=settings.github_timeout_s, follow_redirects=False) as client,
        _get(client, url, _headers(settings), settings, time.sleep) as response,
    ):
        if response.status_code == 404:
            raise LogRefused(f"job {job_id} of {repository} not found (404)")
        if response.status_code != 200:
            raise LogRefused(f"job {job_id} of {repository}: {response.status_code}")
        data = _read_capped(response, 1 << 20)
    try:
        job = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise LogRefused(f"job {job_id} of {repository}: the API answered no JSON") from exc
    if not isinstance(job, dict):
        raise LogRefused(f"job {job_id} of {repository}: the API answered no JSON object")
    return job


def download_job_log(
    settings: Settings,
    repository: str,
    job_id: int,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> bytes:
    """The raw log of job ``job_id``, at most ``github_actions_max_log_bytes``."""
    url = f"{settings.github_api_url.rstrip('/')}/repos/{repository}/actions/jobs/{job_id}/logs"
    headers = _headers(settings)
    limit = settings.github_actions_max_log_bytes
    with httpx.Client(timeout=settings.github_timeout_s, follow_redirects=False) as client:
        for _ in range(MAX_REDIRECTS + 1):
            with _get(client, url, headers, settings, sleep) as response:
                status = response.status_code
                if status == 200:
                    return _read_capped(response, limit)
                if status in _REDIRECTS and "location" in response.headers:
                    target = urljoin(url, response.headers["location"])
                    problem = redirect_problem(target, settings)
                    if problem is not None:
                        raise LogRefused(f"job {job_id} of {repository}: {problem}")
                    url, headers = target, {"User-Agent": "repairbot"}  # signed: no token
                    continue
                if status == 404:
                    raise LogRefused(f"job {job_id} of {repository} not found (404)")
                if status == 410:
                    raise LogRefused(f"the log of job {job_id} of {repository} is gone (410)")
                raise LogRefused(f"job {job_id} of {repository}: log download answered {status}")
    raise LogRefused(f"job {job_id} of {repository}: more than {MAX_REDIRECTS} redirects")
