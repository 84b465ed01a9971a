"""Failed GitLab CI jobs → their traces → the CI intake, exactly like a posted console log.

A ``Pipeline Hook`` names every job of its pipeline with its status, and its merge request; a
``Job Hook`` names one job, so its pipeline (and that pipeline's merge request) is looked up.
Each failed job is one report, keyed by instance, project and job id (a retried job is a new
job): a redelivery, or the Job Hook of a job its Pipeline Hook already brought, finds the
report and fetches nothing. Like ``bot.intake.actions``, the trace is stored as a CI delivery
and a ``console`` report (``bot.intake.ci_reports``), then triage is queued after the commit.

A trace that is gone (expired, erased, empty) is still a report: its body says why there is
nothing to classify, and that line is the report's one finding on the dashboard's failures page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.session import Reading, Writes
from bot.forges.gitlab.events import (
    GitLabJob,
    failed_job_hook,
    failed_pipeline_jobs,
    project_path,
    with_pipeline,
    with_target_branch,
)
from bot.forges.gitlab.rest import GitLabRefused, get_json
from bot.forges.gitlab.traces import TraceGone, download_trace
from bot.intake.ci_reports import ReportSource, fetch_report, known_report
from fixers.intake import Format
from fixers.intake.stages import parse_stage

Fetch = Callable[[Settings, str], dict[str, Any]]


def instance(settings: Settings) -> str:
    """The GitLab instance deliveries come from (its host): part of every job's key."""
    return (urlsplit(settings.gitlab_url).netloc or settings.gitlab_url)[:80]


def gone_note(job: GitLabJob, why: str) -> bytes:
    """The body of a report whose trace cannot be had: one line the failures page shows."""
    return f"ERROR: repairbot could not read the trace of GitLab job {job.job_id}: {why}\n".encode()


def pipeline_hook_jobs(settings: Settings, payload: dict[str, Any]) -> list[GitLabJob]:
    """The failed jobs of a Pipeline Hook (completed later: :func:`complete_pipeline_job`)."""
    return failed_pipeline_jobs(instance(settings), payload)


def job_hook_job(settings: Settings, payload: dict[str, Any]) -> GitLabJob | None:
    """The failed job of a Job Hook (completed later: :func:`complete_job_hook_job`)."""
    return failed_job_hook(instance(settings), payload)


def complete_pipeline_job(settings: Settings, job: GitLabJob) -> GitLabJob:
    """A Pipeline Hook's job with what the hook may leave out: the project's path, the merge
    request's target branch (asked of GitLab only then)."""
    return _completed(settings, job, get_json)


def complete_job_hook_job(settings: Settings, job: GitLabJob) -> GitLabJob:
    """A Job Hook's job completed from its pipeline (its ref: a merge request's?) and then as
    a Pipeline Hook's."""
    if job.pipeline_id is not None:
        path = f"/projects/{job.project_id}/pipelines/{job.pipeline_id}"
        job = with_pipeline(job, get_json(settings, path))
    return _completed(settings, job, get_json)


def _completed(settings: Settings, job: GitLabJob, fetch: Fetch) -> GitLabJob:
    """``job`` with what its hook left out: the project's path, the merge request's target."""
    if job.project is None:
        project = project_path(
            fetch(settings, f"/projects/{job.project_id}").get("path_with_namespace")
        )
        if project is None:
            raise GitLabRefused(f"project {job.project_id}: GitLab answered no usable path")
        job = replace(job, project=project)
    if job.merge_request is not None and job.merge_request.target_branch is None:
        path = f"/projects/{job.project_id}/merge_requests/{job.merge_request.iid}"
        job = with_target_branch(job, fetch(settings, path))
    return job


def _source(job: GitLabJob) -> ReportSource:
    return ReportSource(
        idempotency_key=job.key,
        delivery_key=job.key,
        pipeline=job.pipeline_label,
        build_url=job.web_url,
        repository=job.project,
        pr_number=job.merge_request.iid if job.merge_request else None,
        head_sha=job.sha,
        base_ref=job.branch,
        stage=job.name if parse_stage(job.name) is not None else None,
    )


def _trace(settings: Settings, job: GitLabJob) -> bytes:
    try:
        return download_trace(settings, job.project_id, job.job_id).body
    except TraceGone as exc:
        return gone_note(job, str(exc))


def intake_gitlab_jobs(
    settings: Settings,
    reading: Reading,
    jobs: list[GitLabJob],
    complete: Callable[[Settings, GitLabJob], GitLabJob],
) -> Writes | str:
    """Complete each failed job not known yet (``complete``: its lookups) and fetch its trace,
    with no write lock held; what records them all exactly like posted console logs, or why
    there is nothing to record. A known job costs no request to GitLab."""
    if not jobs:
        return "no failed job"
    steps: list[Writes] = []
    notes: list[str] = []
    for job in jobs:
        label = f"{job.project or job.project_id} job {job.job_id}"
        with reading() as session:
            if known_report(session, ReportSource(idempotency_key=job.key)) is not None:
                notes.append(f"{label} is already known")
                continue
        job = complete(settings, job)
        step = fetch_report(
            reading,
            _source(job),
            label=label,
            fetch=partial(_trace, settings, job),
            format=Format.CONSOLE,
            refused=GitLabRefused,
        )
        if isinstance(step, str):
            notes.append(step)
        else:
            steps.append(step)
    if not steps:
        return "; ".join(notes)

    def record(session: Session) -> str:
        return "; ".join([*notes, *(step(session) for step in steps)])

    return record
