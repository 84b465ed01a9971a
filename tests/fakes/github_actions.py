"""GitHub Actions on the fake GitHub: jobs, their logs behind a redirect, their webhook payloads.

``GET /repos/{o}/{r}/actions/jobs/{id}/logs`` answers as GitHub does: 302 to a short-lived signed
URL on blob storage (here ``/_blobs/job-logs/{id}`` on this server, or on ``blob_host`` to play a
host that is not allow-listed), which serves the raw log and wants no GitHub credentials.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tests.fakes.github_shapes import node_id, repository, user
from tests.fakes.github_webhooks import checked

if TYPE_CHECKING:
    from tests.fakes.github_api import FakeGitHub, Request

Answer = tuple[int, Any]
STARTED = "2026-07-30T10:55:00Z"
COMPLETED = "2026-07-30T10:58:00Z"
# The GitHub Actions app, as check runs name it (github.com/apps/github-actions).
ACTIONS_APP = {
    "id": 15368,
    "slug": "github-actions",
    "node_id": "MDM6QXBwMTUzNjg=",
    "owner": user("github", "Organization"),
    "name": "GitHub Actions",
    "description": "Automate your workflow from idea to production",
    "external_url": "https://help.github.com/en/actions",
    "html_url": "https://github.com/apps/github-actions",
    "created_at": "2018-07-30T09:30:17Z",
    "updated_at": "2024-04-10T20:33:16Z",
    "permissions": {"actions": "write", "checks": "write", "contents": "write", "metadata": "read"},
    "events": ["check_run", "check_suite", "pull_request", "push", "workflow_dispatch"],
}


@dataclass
class FakeJob:
    """One finished Actions job and the raw log it wrote."""

    repository: str
    id: int
    log: bytes
    run_id: int = 9_000_001
    run_attempt: int = 1
    name: str = "test (3.12)"
    workflow_name: str = "CI"
    conclusion: str = "failure"
    head_sha: str = "c" * 40
    head_branch: str = "main"
    blob_host: str | None = None
    log_status: int = 200

    @property
    def html_url(self) -> str:
        """The job's page on github.com."""
        return f"https://github.com/{self.repository}/actions/runs/{self.run_id}/job/{self.id}"

    def json(self, api_url: str) -> dict[str, Any]:
        """The job object of the REST API (and of the ``workflow_job`` webhook)."""
        base = f"{api_url}/repos/{self.repository}/actions"
        return {
            "id": self.id,
            "run_id": self.run_id,
            "run_url": f"{base}/runs/{self.run_id}",
            "run_attempt": self.run_attempt,
            "node_id": f"CR_kwDO{self.id}",
            "head_sha": self.head_sha,
            "head_branch": self.head_branch,
            "url": f"{base}/jobs/{self.id}",
            "html_url": self.html_url,
            "status": "completed",
            "conclusion": self.conclusion,
            "created_at": STARTED,
            "started_at": STARTED,
            "completed_at": COMPLETED,
            "name": self.name,
            "workflow_name": self.workflow_name,
            "check_run_url": f"{api_url}/repos/{self.repository}/check-runs/{self.id}",
            "labels": ["ubuntu-latest"],
            "runner_id": 7,
            "runner_name": "GitHub Actions 7",
            "runner_group_id": 2,
            "runner_group_name": "GitHub Actions",
            "steps": [
                {
                    "name": "Set up job",
                    "status": "completed",
                    "conclusion": "success",
                    "number": 1,
                    "started_at": STARTED,
                    "completed_at": "2026-07-30T10:55:04Z",
                },
                {
                    "name": "Run pytest",
                    "status": "completed",
                    "conclusion": "failure",
                    "number": 2,
                    "started_at": "2026-07-30T10:55:04Z",
                    "completed_at": COMPLETED,
                },
            ],
        }


def _repository(state: FakeGitHub, full_name: str) -> dict[str, Any]:
    # A job may name a repository the test never created on the double.
    repo = state.repos.get(full_name)
    branch = repo.default_branch if repo else "main"
    return repository(full_name, branch, state.url, full=False)


def workflow_job_event(state: FakeGitHub, job: FakeJob) -> dict[str, Any]:
    """The ``workflow_job`` ``completed`` payload GitHub sends for ``job``."""
    payload = {
        "action": "completed",
        "workflow_job": job.json(state.url),
        "repository": _repository(state, job.repository),
        "sender": user("alice", api_url=state.url),
    }
    return checked(state, "workflow_job", payload)


def check_run_event(state: FakeGitHub, job: FakeJob) -> dict[str, Any]:
    """The ``check_run`` ``completed`` payload GitHub Actions' app sends for ``job``."""
    api = f"{state.url}/repos/{job.repository}"
    payload = {
        "action": "completed",
        "check_run": {
            "id": job.id,
            "node_id": node_id("CheckRun", job.id),
            "name": job.name,
            "head_sha": job.head_sha,
            "external_id": f"ca395085-040a-526b-2ce8-bdc85f692774-{job.id}",
            "url": f"{api}/check-runs/{job.id}",
            "html_url": job.html_url,
            "details_url": job.html_url,
            "status": "completed",
            "conclusion": job.conclusion,
            "started_at": STARTED,
            "completed_at": COMPLETED,
            "output": {
                "title": None,
                "summary": None,
                "text": None,
                "annotations_count": 0,
                "annotations_url": f"{api}/check-runs/{job.id}/annotations",
            },
            "app": ACTIONS_APP,
            "check_suite": {
                "id": job.run_id + 1,
                "node_id": node_id("CheckSuite", job.run_id + 1),
                "head_branch": job.head_branch,
                "head_sha": job.head_sha,
                "status": "completed",
                "conclusion": job.conclusion,
                "url": f"{api}/check-suites/{job.run_id + 1}",
                "app": ACTIONS_APP,
                "created_at": STARTED,
                "updated_at": COMPLETED,
            },
            "pull_requests": [],
        },
        "repository": _repository(state, job.repository),
        "sender": user("alice", api_url=state.url),
    }
    return checked(state, "check_run", payload)


def actions_log(lines: list[str], *, step: str = "Run pytest", exit_code: int = 1) -> bytes:
    """``lines`` as a job log downloaded from GitHub: BOM, 7-digit timestamps, groups, trailer."""
    body = ["Current runner version: '2.317.0'", "##[group]Operating System", "Ubuntu", "22.04.4"]
    body += ["LTS", "##[endgroup]", f"##[group]Run {step.removeprefix('Run ')}", "shell: bash -e"]
    body += ["##[endgroup]", *lines]
    if exit_code:
        body.append(f"##[error]Process completed with exit code {exit_code}.")
    body += ["Post job cleanup.", "Cleaning up orphan processes"]
    stamped = [
        f"2026-07-30T10:55:{i // 100 % 60:02d}.{i * 7654321 % 10**7:07d}Z {line}"
        for i, line in enumerate(body)
    ]
    return ("\ufeff" + "\n".join(stamped) + "\n").encode()


def _job(state: FakeGitHub, request: Request) -> FakeJob | None:
    job = state.jobs.get(int(request.match["id"]))
    full_name = f"{request.match['owner']}/{request.match['name']}"
    return job if job is not None and job.repository == full_name else None


def get_job(state: FakeGitHub, request: Request) -> Answer:
    job = _job(state, request)
    return (200, job.json(state.url)) if job else (404, {"message": "Not Found"})


def job_logs(state: FakeGitHub, request: Request) -> Answer:
    from tests.fakes.github_api import Raw

    job = _job(state, request)
    if job is None:
        return 404, {"message": "Not Found"}
    if job.log_status != 200:
        return job.log_status, {"message": "Logs are no longer available"}
    base = state.url
    if job.blob_host is not None:
        base = f"http://{job.blob_host}:{state.url.rsplit(':', 1)[1]}"
    location = f"{base}/_blobs/job-logs/{job.id}?sv=2021-08-06&sig={secrets.token_hex(8)}"
    return 302, Raw(headers={"location": location})


def job_log_blob(state: FakeGitHub, request: Request) -> Answer:
    from tests.fakes.github_api import Raw

    job = state.jobs.get(int(request.match["id"]))
    if job is None:
        return 404, Raw(b"BlobNotFound", "application/xml")
    return 200, Raw(job.log)
