"""Failed checks that link a Jenkins build → that build's ``testReport`` → the CI intake.

Only allow-listed hosts are fetched (the configured Jenkins URL's host is always allowed), with
the configured credentials, no redirects and a size cap: a check's ``details_url`` is text anyone
who can post a status wrote, so it must not steer our credentials anywhere else.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import httpx

from bot.config import Settings
from bot.db.session import Reading, Writes
from bot.forges.github.events import CheckFailure
from bot.intake.ci_reports import ReportSource, fetch_report
from fixers.intake import Format

BUILD_PATH = re.compile(r"^(?P<jobs>(?:/job/[^/]+)+)/(?P<number>\d+)(?:/.*)?$")


class BuildRefused(ValueError):
    """A build link we will not fetch; the message says why."""


def build_identity(build_url: str, settings: Settings) -> tuple[str, int, str]:
    """``(pipeline, build number, testReport URL)`` of an allowed Jenkins build link."""
    parts = urlsplit(build_url)
    allowed = {h.lower() for h in settings.jenkins_allowed_hosts}
    if settings.jenkins_url:
        allowed.add((urlsplit(settings.jenkins_url).hostname or "").lower())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BuildRefused(f"not an http(s) URL: {build_url[:200]!r}")
    if parts.hostname.lower() not in allowed or parts.username or parts.password:
        raise BuildRefused(f"host {parts.hostname!r} is not an allowed Jenkins host")
    base_path = urlsplit(settings.jenkins_url).path.rstrip("/") if settings.jenkins_url else ""
    path = (
        parts.path[len(base_path) :]
        if base_path and parts.path.startswith(base_path)
        else parts.path
    )
    match = BUILD_PATH.match(path)
    if match is None:
        raise BuildRefused(f"not a Jenkins build URL: {build_url[:200]!r}")
    pipeline = "/".join(match["jobs"].split("/job/")[1:])
    prefix = path[: match.end("number")]
    root = f"{parts.scheme}://{parts.netloc}{base_path}{prefix}"
    return pipeline, int(match["number"]), f"{root}/testReport/api/json"


def fetch_testreport(settings: Settings, url: str) -> bytes:
    """The testReport JSON, at most ``jenkins_max_report_bytes``."""
    auth = None
    if settings.jenkins_user and settings.jenkins_token is not None:
        auth = (settings.jenkins_user, settings.jenkins_token.get_secret_value())
    chunks: list[bytes] = []
    size = 0
    with httpx.stream("GET", url, auth=auth, timeout=30, follow_redirects=False) as response:
        if response.status_code == 404:
            raise BuildRefused(f"the build has no testReport ({url})")
        response.raise_for_status()
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > settings.jenkins_max_report_bytes:
                raise BuildRefused(f"testReport over {settings.jenkins_max_report_bytes} bytes")
            chunks.append(chunk)
    return b"".join(chunks)


def intake_check_failure(
    settings: Settings,
    reading: Reading,
    failure: CheckFailure,
) -> Writes | str:
    """Fetch the failed build's testReport (no write lock held); what records it like a CI
    post, or why nothing is to be recorded."""
    pipeline, number, url = build_identity(failure.build_url, settings)
    source = ReportSource(
        pipeline=pipeline,
        build_number=number,
        build_url=failure.build_url,
        repository=failure.repository,
        head_sha=failure.head_sha,
    )
    return fetch_report(
        reading,
        source,
        label=f"{pipeline}#{number}",
        fetch=lambda: fetch_testreport(settings, url),
        format=Format.TESTREPORT,
        refused=BuildRefused,
    )
