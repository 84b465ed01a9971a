"""Buildkite's webhook payloads and REST objects as the values the intake uses (pure).

A ``job.finished`` payload carries ``job``, ``build`` and ``pipeline`` (the REST API's Job,
Build and Pipeline objects); a ``build.finished`` payload carries ``build`` and ``pipeline``
without the build's jobs, which the REST API's build has. Slugs, ids and the commit reach URL
paths, git and web pages, so each is kept only when it has the shape Buildkite gives it.

A job counts as failed when it is a command job (``script``) that was not soft-failed and either
ended ``failed``/``timed_out`` or exited non-zero; canceled, skipped, broken or expired jobs ran
no tests of theirs, and a soft failure is one the pipeline allows.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from fixers.repo.input_rules import http_url_problem

KEY_CHARS = 200
SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")
FAILED_STATES = frozenset({"failed", "timed_out"})
NOT_RUN_STATES = frozenset({"canceled", "canceling", "skipped", "broken", "expired", "not_run"})


@dataclass(frozen=True)
class BuildRef:
    """Which build: organization slug, pipeline slug and the build's number in its pipeline."""

    organization: str
    pipeline: str
    number: int

    @property
    def path(self) -> str:
        """The build's path under the REST API's ``/v2``."""
        return (
            f"/v2/organizations/{self.organization}/pipelines/{self.pipeline}/builds/{self.number}"
        )

    def __str__(self) -> str:
        return f"{self.organization}/{self.pipeline}#{self.number}"


@dataclass(frozen=True)
class PullRequest:
    """A build's ``pull_request``: the PR's number, its base branch and its repository URL."""

    number: int
    base: str | None
    repository: str | None


@dataclass(frozen=True)
class BuildkiteBuild:
    """A finished build: which one, what it built, and the pipeline's repository URL."""

    ref: BuildRef
    build_id: str
    commit: str | None
    branch: str | None
    pull_request: PullRequest | None
    repository_url: str | None
    finished_at: str | None


@dataclass(frozen=True)
class BuildkiteJob:
    """One job of a build, with what a report needs to say about it."""

    build: BuildkiteBuild
    job_id: str
    name: str
    shard: str  # " (2/4)" for the second of four parallel jobs, else ""
    state: str
    exit_status: int | None
    soft_failed: bool
    kind: str
    web_url: str | None

    @property
    def failed(self) -> bool:
        """Whether this is a command job that failed for real (see the module docstring)."""
        if self.kind != "script" or self.soft_failed or self.state in NOT_RUN_STATES:
            return False
        return self.state in FAILED_STATES or self.exit_status not in (None, 0)

    @property
    def key(self) -> str:
        """The idempotency key of its report (and of its stored log): a retried job is a new
        job, with a new id, so a retry is a new report."""
        key = (
            f"buildkite:{self.build.ref.path.removeprefix('/v2/organizations/')}/jobs/{self.job_id}"
        )
        if len(key) > KEY_CHARS:
            key = "buildkite:sha256:" + hashlib.sha256(key.encode()).hexdigest()
        return key

    @property
    def log_path(self) -> str:
        """The job's log under the REST API."""
        return f"{self.build.ref.path}/jobs/{self.job_id}/log"

    @property
    def pipeline_label(self) -> str:
        """How the dashboard names it: pipeline #number / job."""
        ref = self.build.ref
        return f"{ref.organization}/{ref.pipeline} #{ref.number} / {self.name}{self.shard}"[:200]


def build_of_key(key: str | None) -> BuildRef | None:
    """The build a report's idempotency key (``BuildkiteJob.key``) names; None for another key
    (or a digest, for slugs too long to keep)."""
    match = re.fullmatch(r"buildkite:([^/]+)/pipelines/([^/]+)/builds/(\d+)/jobs/[^/]+", key or "")
    if match is None:
        return None
    return BuildRef(match[1], match[2], int(match[3]))


def _get(data: Any, *path: str) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _text(value: Any, limit: int = 200) -> str | None:
    return value[:limit] if isinstance(value, str) and value.strip() else None


def _matching(value: Any, pattern: re.Pattern[str]) -> str | None:
    return value if isinstance(value, str) and pattern.match(value) else None


def _pull_request(value: Any) -> PullRequest | None:
    """Buildkite's ``pull_request`` (``{}`` or absent for a branch build; its id is a string)."""
    number = _get(value, "id")
    if isinstance(number, int) and not isinstance(number, bool):
        number = str(number)
    if not (isinstance(number, str) and number.isdigit() and 0 < len(number) <= 9):
        return None
    base = _text(_get(value, "base"))
    return PullRequest(int(number), base, _text(_get(value, "repository"), 500))


def build_from_json(build: Any, pipeline: Any) -> BuildkiteBuild | None:
    """A Build (and its Pipeline) as the webhook or the REST API gives them; None when the
    fields that identify it are missing or not of Buildkite's shape."""
    organization = _organization(build, pipeline)
    slug = _matching(_get(pipeline, "slug"), SLUG)
    number, build_id = _get(build, "number"), _matching(_get(build, "id"), UUID)
    if not (organization and slug and build_id) or type(number) is not int or number <= 0:
        return None
    return BuildkiteBuild(
        ref=BuildRef(organization, slug, number),
        build_id=build_id,
        commit=_matching(_get(build, "commit"), SHA),
        branch=_text(_get(build, "branch")),
        pull_request=_pull_request(_get(build, "pull_request")),
        repository_url=_text(_get(pipeline, "repository"), 500),
        finished_at=_text(_get(build, "finished_at"), 40),
    )


def _organization(build: Any, pipeline: Any) -> str | None:
    """The organization slug, from the build's (else the pipeline's) API URL,
    ``.../organizations/{org}/pipelines/...``: no payload names the organization otherwise."""
    for url in (_get(build, "url"), _get(pipeline, "url")):
        match = re.search(r"/organizations/([^/]+)/pipelines/", url if isinstance(url, str) else "")
        if match is not None:
            return _matching(match[1], SLUG)
    return None


def job_from_json(build: BuildkiteBuild, job: Any) -> BuildkiteJob | None:
    """A Job of ``build``; None when it has no id of Buildkite's shape."""
    job_id = _matching(_get(job, "id"), UUID)
    if job_id is None:
        return None
    exit_status = _get(job, "exit_status")
    url = _text(_get(job, "web_url"), 1000)
    name = _text(_get(job, "name")) or _text(_get(job, "step_key")) or f"job {job_id[:8]}"
    index, total = _get(job, "parallel_group_index"), _get(job, "parallel_group_total")
    parallel = type(index) is int and type(total) is int and total > 1
    return BuildkiteJob(
        build=build,
        job_id=job_id,
        name=name,
        shard=f" ({index + 1}/{total})" if parallel else "",
        state=_text(_get(job, "state"), 32) or "",
        exit_status=exit_status if type(exit_status) is int else None,
        soft_failed=_get(job, "soft_failed") is True,
        kind=_text(_get(job, "type"), 32) or "",
        web_url=url if url and http_url_problem(url) is None else None,
    )


def finished_job(payload: dict[str, Any]) -> BuildkiteJob | None:
    """The job of a ``job.finished`` payload, when it names its job and build."""
    build = build_from_json(payload.get("build"), payload.get("pipeline"))
    return job_from_json(build, payload.get("job")) if build is not None else None


def finished_build(payload: dict[str, Any]) -> BuildkiteBuild | None:
    """The build of a ``build.finished`` payload, when it names it."""
    return build_from_json(payload.get("build"), payload.get("pipeline"))


def failed_jobs(
    build: BuildkiteBuild, api_build: dict[str, Any]
) -> list[tuple[dict[str, Any], BuildkiteJob]]:
    """The failed jobs of ``build`` from the REST API's answer for it: each Job object as
    Buildkite gave it, and as parsed."""
    jobs = api_build.get("jobs")
    found = []
    for raw in jobs if isinstance(jobs, list) else []:
        job = job_from_json(build, raw)
        if job is not None and job.failed:
            found.append((raw, job))
    return found
