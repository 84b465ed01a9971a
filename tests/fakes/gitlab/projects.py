"""The GitLab double's objects: projects (a bare git repository each) with their pipelines,
jobs, merge requests, notes and commit statuses, and their REST API shapes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.fakes.github_git import git_out

BOT = {"id": 7, "username": "repairbot", "name": "repairbot", "state": "active"}


def api_time(moment: datetime | None = None) -> str:
    """A time as GitLab's REST API writes it (``2026-07-30T10:55:00.000Z``)."""
    moment = (moment or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def hook_time(moment: datetime | None = None) -> str:
    """A time as GitLab's webhooks write it (``2026-07-30 10:55:00 UTC``)."""
    return (moment or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@dataclass
class FakeJob:
    """A CI job and its trace: bytes, chunks from a generator (``trace_chunks``, with
    ``trace_length``), or gone (``trace_status`` 404 or 410)."""

    name: str
    stage: str = "test"
    status: str = "failed"
    trace: bytes = b""
    trace_chunks: Callable[[], Iterable[bytes]] | None = None
    trace_length: int = 0
    trace_status: int = 200
    allow_failure: bool = False
    id: int = 0
    pipeline_id: int = 0
    project_id: int = 0


@dataclass
class FakeProject:
    """One project on the GitLab double."""

    id: int
    path: str
    repo: Path
    default_branch: str
    url: str
    pipelines: dict[int, dict[str, Any]] = field(default_factory=dict)
    merge_requests: dict[int, dict[str, Any]] = field(default_factory=dict)
    notes: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    statuses: list[dict[str, Any]] = field(default_factory=list)

    @property
    def web_url(self) -> str:
        """The project's page."""
        return f"{self.url}/{self.path}"

    def json(self) -> dict[str, Any]:
        """``GET /projects/:id``."""
        name = self.path.rsplit("/", 1)[-1]
        return {
            "id": self.id,
            "name": name,
            "path": name,
            "path_with_namespace": self.path,
            "default_branch": self.default_branch,
            "web_url": self.web_url,
            "http_url_to_repo": f"{self.web_url}.git",
            "description": None,
            "created_at": api_time(),
            "visibility": "private",
        }

    def branch_head(self, branch: str) -> str | None:
        """The commit ``branch`` points at in the repository, or None."""
        try:
            return git_out(self.repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
        except RuntimeError:
            return None

    def add_pipeline(self, pid: int, sha: str, ref: str, mr_iid: int | None) -> dict[str, Any]:
        """A finished pipeline (its jobs are added by the caller)."""
        pipeline = {"id": pid, "iid": len(self.pipelines) + 1, "sha": sha, "jobs": []}
        pipeline.update(ref=f"refs/merge-requests/{mr_iid}/head" if mr_iid else ref, mr_iid=mr_iid)
        self.pipelines[pid] = pipeline
        return pipeline

    def pipeline_json(self, pipeline: dict[str, Any]) -> dict[str, Any]:
        """``GET /projects/:id/pipelines/:pipeline_id``."""
        failed = any(job.status == "failed" for job in pipeline["jobs"])
        return {
            "id": pipeline["id"],
            "iid": pipeline["iid"],
            "project_id": self.id,
            "sha": pipeline["sha"],
            "ref": pipeline["ref"],
            "status": "failed" if failed else "success",
            "source": "merge_request_event" if pipeline["mr_iid"] else "push",
            "web_url": f"{self.web_url}/-/pipelines/{pipeline['id']}",
            "created_at": api_time(),
            "updated_at": api_time(),
        }

    def add_merge_request(
        self, iid_id: tuple[int, int], data: dict[str, Any], author: dict[str, Any]
    ) -> dict[str, Any]:
        """An open merge request from ``data``'s source branch (already in the repository)."""
        iid, mr_id = iid_id
        merge_request = {
            "id": mr_id,
            "iid": iid,
            "project_id": self.id,
            "title": str(data["title"]),
            "description": data.get("description"),
            "state": "opened",
            "source_branch": str(data["source_branch"]),
            "target_branch": str(data["target_branch"]),
            "source_project_id": self.id,
            "target_project_id": self.id,
            "sha": self.branch_head(str(data["source_branch"])),
            "web_url": f"{self.web_url}/-/merge_requests/{iid}",
            "author": author,
            "created_at": api_time(),
            "updated_at": api_time(),
            "draft": False,
            "merged_at": None,
        }
        self.merge_requests[iid] = merge_request
        self.notes[iid] = []
        return merge_request


def gitlab_trace(lines: list[str], *, script: str = "python -m pytest -q") -> bytes:
    """A job trace as a GitLab runner writes it: collapsible sections (``section_start:TS:NAME``
    then ``\\r\\x1b[0K``), the script's command in green, its output, the job's last line."""
    ts = 1785400000
    start = f'section_start:{ts}:step_script\r\x1b[0K\x1b[0K\x1b[36;1mExecuting "step_script" stage\x1b[0;m'
    out = [
        "\x1b[0KRunning with gitlab-runner 17.4.0 (b92ee590)\x1b[0;m",
        f'section_start:{ts}:prepare_executor\r\x1b[0K\x1b[0K\x1b[36;1mPreparing the "docker" executor\x1b[0;m',
        f"section_end:{ts}:prepare_executor\r\x1b[0K",
        start,
        f"\x1b[32;1m$ {script}\x1b[0;m",
        *lines,
        f"section_end:{ts + 60}:step_script\r\x1b[0K",
        "\x1b[31;1mERROR: Job failed: exit code 1",
        "\x1b[0;m",
    ]
    return ("\n".join(out) + "\n").encode()
