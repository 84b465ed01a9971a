"""Failed GitHub Actions jobs → their logs → the CI intake, exactly like a posted console log.

Two events say a job failed: ``workflow_job`` (``completed``, conclusion ``failure`` or
``timed_out``) and the ``check_run`` GitHub Actions' app writes for the same job (its check run
id is the job id). Both lead to one report, keyed by repository, job id and run attempt (a
re-run is a new attempt, with new job ids): whichever arrives second finds the first's report
and downloads nothing. Like ``bot.intake.jenkins``, the log is stored as a CI delivery and a
``console`` report (``bot.intake.ci_reports``), then triage is queued after the commit.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from bot.config import Settings
from bot.db.session import Reading, Writes
from bot.forges.github.job_logs import LogRefused, download_job_log, job_json
from bot.intake.ci_reports import ReportSource, fetch_report
from fixers.intake import Format
from fixers.intake.stages import parse_stage
from fixers.repo.input_rules import http_url_problem

ACTIONS_APP = "github-actions"
FAILED = ("failure", "timed_out")
KEY_CHARS = 200
_SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")


@dataclass(frozen=True)
class ActionsJob:
    """One finished GitHub Actions job, with what a report needs to say about it."""

    repository: str
    job_id: int
    run_attempt: int
    name: str
    workflow_name: str
    head_sha: str | None
    html_url: str | None
    conclusion: str

    @property
    def key(self) -> str:
        """The idempotency key of its report (and of its stored log)."""
        key = f"github-actions:{self.repository}:job-{self.job_id}:attempt-{self.run_attempt}"
        if len(key) > KEY_CHARS:
            key = "github-actions:" + hashlib.sha256(key.encode()).hexdigest()
        return key

    @property
    def pipeline(self) -> str:
        """How the dashboard names it: workflow / job."""
        return f"{self.workflow_name} / {self.name}"[:200]


def _get(data: Any, *path: str) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def job_from_json(repository: str, job: dict[str, Any]) -> ActionsJob | None:
    """A job object (REST API or ``workflow_job`` payload), when it has the fields we use.

    Values that would reach git or a web page unchecked (the head SHA, the job's link) are
    dropped when they are not what GitHub sends.
    """
    job_id = _int(job.get("id"))
    if job_id is None:
        return None
    sha, url = _text(job.get("head_sha")), _text(job.get("html_url"))
    return ActionsJob(
        repository=repository,
        job_id=job_id,
        run_attempt=_int(job.get("run_attempt")) or 1,
        name=_text(job.get("name")) or f"job {job_id}",
        workflow_name=_text(job.get("workflow_name")) or "GitHub Actions",
        head_sha=sha if sha and _SHA.match(sha) else None,
        html_url=url if url and http_url_problem(url) is None else None,
        conclusion=_text(job.get("conclusion")) or "",
    )


def failed_workflow_job(payload: dict[str, Any]) -> ActionsJob | None:
    """A ``workflow_job`` completed with a failure, or None."""
    repository = _text(_get(payload, "repository", "full_name"))
    job = _get(payload, "workflow_job")
    if _get(payload, "action") != "completed" or repository is None or not isinstance(job, dict):
        return None
    parsed = job_from_json(repository, job)
    return parsed if parsed is not None and parsed.conclusion in FAILED else None


def is_actions_check_run(payload: dict[str, Any]) -> bool:
    """Whether a ``check_run`` was written by GitHub Actions (its id is then the job id)."""
    return bool(_get(payload, "check_run", "app", "slug") == ACTIONS_APP)


def failed_actions_check_run(payload: dict[str, Any]) -> tuple[str, int] | None:
    """``(repository, job id)`` of a failed check run of GitHub Actions, or None."""
    run = _get(payload, "check_run")
    repository = _text(_get(payload, "repository", "full_name"))
    job_id = _int(_get(run, "id"))
    if not is_actions_check_run(payload) or repository is None or job_id is None:
        return None
    if _get(run, "status") != "completed" or _get(run, "conclusion") not in FAILED:
        return None
    return repository, job_id


def fetch_job(settings: Settings, repository: str, job_id: int) -> ActionsJob:
    """The job behind a check run, from the API (the check run does not carry its attempt)."""
    job = job_from_json(repository, job_json(settings, repository, job_id))
    if job is None or job.job_id != job_id:
        raise LogRefused(f"job {job_id} of {repository}: the API answered another job")
    return job


def intake_actions_job(
    settings: Settings,
    reading: Reading,
    job: ActionsJob,
) -> Writes | str:
    """Download the failed job's log (no write lock held); what queues it exactly like a
    posted console log, or why nothing is to be recorded."""
    if not settings.github_actions_logs:
        return "GitHub Actions logs are off (REPAIRBOT_GITHUB_ACTIONS_LOGS)"
    label = f"{job.repository} job {job.job_id} attempt {job.run_attempt}"
    source = ReportSource(
        idempotency_key=job.key,
        delivery_key=job.key,
        pipeline=job.pipeline,
        build_url=job.html_url,
        repository=job.repository,
        head_sha=job.head_sha,
        stage=job.name if parse_stage(job.name) is not None else None,
    )
    return fetch_report(
        reading,
        source,
        label=label,
        fetch=lambda: download_job_log(settings, job.repository, job.job_id),
        format=Format.CONSOLE,
        refused=LogRefused,
    )
