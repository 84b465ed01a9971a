"""GitLab webhook payloads → the failed jobs they name, with what a report needs of each.

A ``Pipeline Hook`` carries the pipeline (``object_attributes``), its project, its merge
request (``merge_request``, null for a branch pipeline) and its jobs (``builds``); a ``Job
Hook`` (``object_kind: build``) carries one job, its pipeline's id and no merge request, so the
intake looks the pipeline up (``bot.intake.gitlab``). Values that would reach git, the
database or a web page unchecked (SHAs, refs, URLs) are dropped when they are not what GitLab
sends.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from typing import Any

from fixers.repo.input_rules import http_url_problem, ref_problem

KEY_CHARS = 200
_SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")
_MERGE_REQUEST_REF = re.compile(r"^refs/merge-requests/(?P<iid>\d+)/(?:head|merge|train)$")
_PROJECT_PATH = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_.][A-Za-z0-9_.-]*)+$")


@dataclass(frozen=True)
class MergeRequestRef:
    """The merge request a pipeline ran for: its number in the project and its target."""

    iid: int
    target_branch: str | None


@dataclass(frozen=True)
class GitLabJob:
    """One failed GitLab CI job and where it ran."""

    instance: str  # GitLab's host: job ids are unique per instance only
    project_id: int
    project: str | None  # path with namespace (group/sub/name), when known
    job_id: int
    name: str
    stage: str | None
    pipeline_id: int | None
    sha: str | None
    ref: str | None
    merge_request: MergeRequestRef | None = None
    web_url: str | None = None

    @property
    def key(self) -> str:
        """The idempotency key of its report: a retried job is a new job with a new id, so
        the job id alone tells attempts apart."""
        key = f"gitlab:{self.instance}:{self.project_id}:job-{self.job_id}"
        if len(key) > KEY_CHARS:
            key = "gitlab:" + hashlib.sha256(key.encode()).hexdigest()
        return key

    @property
    def pipeline_label(self) -> str:
        """How the dashboard names it: pipeline / job."""
        pipeline = f"pipeline {self.pipeline_id}" if self.pipeline_id else "GitLab CI"
        return f"{pipeline} / {self.name}"[:200]

    @property
    def branch(self) -> str | None:
        """The branch a report is for: the merge request's target, else the pipeline's ref
        when it is a branch (not a merge request's ref)."""
        if self.merge_request is not None:
            return self.merge_request.target_branch
        if self.ref is None or merge_request_iid(self.ref) is not None:
            return None
        return self.ref


def _get(data: Any, *path: str) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _text(value: Any, limit: int = 200) -> str | None:
    return value[:limit] if isinstance(value, str) and value else None


def _sha(value: Any) -> str | None:
    return value if isinstance(value, str) and _SHA.match(value) else None


def _ref(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return value if ref_problem(value) is None else None


def _url(value: Any) -> str | None:
    return value if isinstance(value, str) and http_url_problem(value) is None else None


def project_path(value: Any) -> str | None:
    """A project's path with namespace, when it is one (``group/sub/name``, no ``..``)."""
    if not isinstance(value, str) or len(value) > 255 or ".." in value:
        return None
    return value if _PROJECT_PATH.match(value) else None


def merge_request_iid(ref: str) -> int | None:
    """The merge request of a merge request pipeline's ref (``refs/merge-requests/5/head``)."""
    match = _MERGE_REQUEST_REF.match(ref)
    return int(match["iid"]) if match else None


def merge_request_of(payload: dict[str, Any]) -> MergeRequestRef | None:
    """A Pipeline Hook's ``merge_request`` object (None for a branch pipeline)."""
    iid = _int(_get(payload, "merge_request", "iid"))
    if iid is None:
        return None
    target = _get(payload, "merge_request", "target_branch")
    return MergeRequestRef(iid, target if _ref(target) and isinstance(target, str) else None)


def failed_pipeline_jobs(instance: str, payload: dict[str, Any]) -> list[GitLabJob]:
    """The failed jobs of a Pipeline Hook (a failure allowed by ``allow_failure`` excepted:
    it fails nothing), in the order GitLab lists them."""
    project_id = _int(_get(payload, "project", "id"))
    attributes = _get(payload, "object_attributes")
    builds = _get(payload, "builds")
    if payload.get("object_kind") != "pipeline" or project_id is None:
        return []
    if not isinstance(attributes, dict) or not isinstance(builds, list):
        return []
    merge_request = merge_request_of(payload)
    ref = _ref(attributes.get("ref"))
    if merge_request is None and ref is not None and (iid := merge_request_iid(ref)) is not None:
        merge_request = MergeRequestRef(iid, None)
    web_url = _url(_get(payload, "project", "web_url"))
    jobs = []
    for build in builds:
        job_id = _int(_get(build, "id"))
        if job_id is None or _get(build, "status") != "failed" or _get(build, "allow_failure"):
            continue
        jobs.append(
            GitLabJob(
                instance=instance,
                project_id=project_id,
                project=project_path(_get(payload, "project", "path_with_namespace")),
                job_id=job_id,
                name=_text(_get(build, "name")) or f"job {job_id}",
                stage=_text(_get(build, "stage")),
                pipeline_id=_int(attributes.get("id")),
                sha=_sha(attributes.get("sha")),
                ref=ref,
                merge_request=merge_request,
                web_url=f"{web_url}/-/jobs/{job_id}" if web_url else None,
            )
        )
    return jobs


def failed_job_hook(instance: str, payload: dict[str, Any]) -> GitLabJob | None:
    """The job of a Job Hook that failed (not an allowed failure), or None."""
    project_id = _int(payload.get("project_id"))
    job_id = _int(payload.get("build_id"))
    if payload.get("object_kind") != "build" or project_id is None or job_id is None:
        return None
    if payload.get("build_status") != "failed" or payload.get("build_allow_failure"):
        return None
    web_url = _url(_get(payload, "project", "web_url")) or _url(
        _get(payload, "repository", "homepage")
    )
    ref = _ref(payload.get("ref"))
    iid = merge_request_iid(ref) if ref else None
    return GitLabJob(
        instance=instance,
        project_id=project_id,
        project=project_path(_get(payload, "project", "path_with_namespace")),
        job_id=job_id,
        name=_text(payload.get("build_name")) or f"job {job_id}",
        stage=_text(payload.get("build_stage")),
        pipeline_id=_int(payload.get("pipeline_id")),
        sha=_sha(payload.get("sha")),
        ref=ref,
        merge_request=MergeRequestRef(iid, None) if iid is not None else None,
        web_url=f"{web_url}/-/jobs/{job_id}" if web_url else None,
    )


def with_pipeline(job: GitLabJob, pipeline: dict[str, Any]) -> GitLabJob:
    """``job`` completed from its pipeline as the API describes it (``GET .../pipelines/:id``):
    its ref (a merge request's, for a merge request pipeline) and commit."""
    ref = _ref(pipeline.get("ref")) or job.ref
    iid = merge_request_iid(ref) if ref else None
    merge_request = job.merge_request or (MergeRequestRef(iid, None) if iid else None)
    return replace(
        job, ref=ref, sha=job.sha or _sha(pipeline.get("sha")), merge_request=merge_request
    )


def with_target_branch(job: GitLabJob, merge_request: dict[str, Any]) -> GitLabJob:
    """``job`` with its merge request's target branch (``GET .../merge_requests/:iid``)."""
    if job.merge_request is None:
        return job
    target = merge_request.get("target_branch")
    branch = target if isinstance(target, str) and _ref(target) else None
    return replace(job, merge_request=MergeRequestRef(job.merge_request.iid, branch))
