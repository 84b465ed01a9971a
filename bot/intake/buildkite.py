"""Failed Buildkite jobs → their logs → the CI intake, exactly like a posted console log.

Two events say a job failed. ``job.finished`` names the job: its log is fetched and recorded.
``build.finished`` names only the build (Buildkite's webhook leaves the jobs out), so the build is
read from the REST API and each failed job becomes a delivery of its own, the ``job.finished``
delivery Buildkite would have sent for it, with the same key: each log is then fetched by its
own task (one log in memory at a time, retried alone), and a ``job.finished`` for the same job,
before or after, is a duplicate. Each job is one report, keyed by organization, pipeline, build
number and job id (a retried job is a new job); whichever delivery comes second finds the first's
report and fetches nothing.

The build maps to the repository the bot repairs through ``REPAIRBOT_BUILDKITE_REPOSITORIES``
(the pipeline's repository URL, or ``org/pipeline``), else, for a GitHub URL, its ``owner/name``;
to its commit, and to its PR and base branch through Buildkite's ``pull_request`` (``id``,
``base``). A log that is gone (expired, deleted, empty) is still a report: its body is one line
saying why there is nothing to classify, and that line is the report's finding on the
dashboard's failures page.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.session import Reading, Writes
from bot.forges.buildkite.events import (
    BuildkiteBuild,
    BuildkiteJob,
    failed_jobs,
    finished_build,
    finished_job,
)
from bot.forges.buildkite.logs import download_job_log
from bot.forges.buildkite.rest import BuildkiteGone, BuildkiteRefused, call_json
from bot.forges.github.mirror import is_github_repository
from bot.intake.ci_reports import ReportSource, fetch_report
from bot.intake.deliveries import GitHubDelivery, record_deliveries
from fixers.intake import Format
from fixers.intake.stages import parse_stage

SOURCE = "buildkite"
PASSED_STATES = frozenset({"passed", "skipped", "not_run"})
_REMOTE = re.compile(r"^(?:[a-z+]+://)?(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d+)?[:/](?P<path>.+)$")


def delivery_id(event: str, payload: dict[str, Any], body: bytes) -> str:
    """What identifies a delivery across Buildkite's retries (it sends no delivery id): the job
    for ``job.finished``; the build and when it finished for ``build.finished`` (a build
    finishes again after a job of it is retried); else a digest of the body."""
    job, build = payload.get("job"), payload.get("build")
    job_id = job.get("id") if isinstance(job, dict) else None
    build_id = build.get("id") if isinstance(build, dict) else None
    finished = build.get("finished_at") if isinstance(build, dict) else None
    if event == "job.finished" and isinstance(job_id, str):
        return f"job.finished:{job_id}"[:150]
    if event == "build.finished" and isinstance(build_id, str) and isinstance(finished, str):
        return f"build.finished:{build_id}:{finished}"[:150]
    return f"{event[:64]}:sha256:{hashlib.sha256(body).hexdigest()}"


def repository_for(settings: Settings, build: BuildkiteBuild) -> str | None:
    """The repository a build's failures are repaired in (see the module docstring)."""
    url = build.repository_url or ""
    mapped = settings.buildkite_repositories
    for key in (url, url.removesuffix(".git"), f"{build.ref.organization}/{build.ref.pipeline}"):
        if key and key in mapped:
            return mapped[key]
    match = _REMOTE.match(url)
    if match is None or match["host"].lower() not in _github_hosts(settings):
        return None
    name = match["path"].strip("/").removesuffix(".git")
    return name if is_github_repository(name) else None


def _github_hosts(settings: Settings) -> set[str]:
    template = settings.github_git_url_template.replace("{repository}", "o/r")
    return {"github.com", (urlsplit(template).hostname or "github.com").lower()}


def gone_note(why: str) -> bytes:
    """The body of a report whose log cannot be had: one line the failures page shows."""
    return f"ERROR: repairbot could not read this Buildkite job's log: {why}\n".encode()


def _source(settings: Settings, job: BuildkiteJob) -> ReportSource:
    build = job.build
    pull = build.pull_request
    return ReportSource(
        idempotency_key=job.key,
        delivery_key=job.key,
        pipeline=job.pipeline_label,
        build_url=job.web_url,
        repository=repository_for(settings, build),
        pr_number=pull.number if pull else None,
        head_sha=build.commit,
        base_ref=(pull.base if pull else None) or build.branch,
        stage=job.name if parse_stage(job.name) is not None else None,
    )


def _log(settings: Settings, job: BuildkiteJob) -> bytes:
    try:
        return download_job_log(settings, job).body
    except BuildkiteGone as exc:
        return gone_note(str(exc))


def intake_finished_job(
    settings: Settings, reading: Reading, payload: dict[str, Any]
) -> Writes | str:
    """A ``job.finished``: fetch the failed job's log (no write lock held); what records it like
    a posted console log, or why there is nothing to record."""
    job = finished_job(payload)
    if job is None:
        return "not a job.finished payload naming its job and build"
    if not job.failed:
        soft = ", soft-failed" if job.soft_failed else ""
        return (
            f"job {job.job_id} did not fail ({job.kind} {job.state}, exit {job.exit_status}{soft})"
        )
    return fetch_report(
        reading,
        _source(settings, job),
        label=f"{job.pipeline_label} (job {job.job_id})",
        fetch=partial(_log, settings, job),
        format=Format.CONSOLE,
        refused=BuildkiteRefused,
    )


def intake_finished_build(settings: Settings, payload: dict[str, Any]) -> Writes | str:
    """A ``build.finished``: read the build's jobs; what stores one ``job.finished`` delivery
    per failed job (see the module docstring), or why there is none."""
    build = finished_build(payload)
    if build is None:
        return "not a build.finished payload naming its build"
    state = payload["build"].get("state")
    if state in PASSED_STATES:
        return f"build {build.ref} {state}"
    failed = failed_jobs(build, call_json(settings, "GET", build.ref.path))
    if not failed:
        return f"build {build.ref} ({state}) has no failed command job"
    deliveries = [
        GitHubDelivery(
            f"job.finished:{job.job_id}",
            "job.finished",
            None,
            _job_body(payload, raw),
            source=SOURCE,
        )
        for raw, job in failed
    ]

    def record(session: Session) -> str:
        recorded = record_deliveries(session, deliveries)
        fresh = [d.key for d, r in zip(deliveries, recorded, strict=True) if r.delivery_id]
        return f"build {build.ref}: {len(failed)} failed job(s), {len(fresh)} new: {fresh}"

    return record


def _job_body(payload: dict[str, Any], job: dict[str, Any]) -> bytes:
    """The ``job.finished`` body for one job of a finished build (the build without its jobs,
    as Buildkite's own job webhooks have it)."""
    return json.dumps(
        {
            "event": "job.finished",
            "job": job,
            "build": payload.get("build"),
            "pipeline": payload.get("pipeline"),
            "sender": payload.get("sender"),
        }
    ).encode()
