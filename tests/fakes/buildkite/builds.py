"""Builds, jobs and logs on the Buildkite double, in the shapes Buildkite documents.

``FakeBuild.json`` is the Build data model (REST "Get a build"; a webhook's ``build`` is the
same without ``jobs``), ``FakeJob.json`` the Job data model, and ``build_event`` / ``job_event``
the webhook bodies; ``tests/fakes/buildkite/schema.py`` checks each of them. A job's log is
bytes or a ``GeneratedLog``: a log of any length (2 GB) produced on the fly, byte range by byte
range, never held whole. ``buildkite_log`` writes lines as the Buildkite agent does: section
headers (``~~~``, ``---``, ``+++``), the command echoed with ``$``, and each line behind the
agent's timestamp escape (``ESC _bk;t=<ms> BEL``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

WHEN = "2026-07-30T10:55:00.000Z"
DONE = "2026-07-30T10:58:00.000Z"
SENDER = {"id": "8a7693f8-dbae-4783-9137-84090fce9045", "name": "Ada Lovelace"}
CREATOR = {
    "id": "3d3c3bf0-7d58-4afe-8fe7-b3017d5504de",
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "avatar_url": "https://www.gravatar.com/avatar/00000000000000000000000000000000",
    "created_at": "2025-05-22T12:36:45.309Z",
}
CHUNK = 1 << 20


def new_id() -> str:
    """A Buildkite id (a UUID)."""
    return str(uuid.uuid4())


@dataclass(frozen=True)
class GeneratedLog:
    """``head``, then ``filler`` repeated, then ``tail``: ``total`` bytes made as they are read."""

    head: bytes
    filler: bytes
    tail: bytes
    total: int

    def read(self, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        """The bytes ``[start, end)`` in chunks of at most 1 MiB."""
        end = self.total if end is None else min(end, self.total)
        position = start
        while position < end:
            chunk = self._at(position, min(end, position + CHUNK))
            position += len(chunk)
            yield chunk

    def _at(self, start: int, end: int) -> bytes:
        fill_end = self.total - len(self.tail)
        if start < len(self.head):
            return self.head[start : min(end, len(self.head))]
        if start >= fill_end:
            return self.tail[start - fill_end : end - fill_end]
        end = min(end, fill_end)
        offset = (start - len(self.head)) % len(self.filler)
        repeats = (offset + end - start) // len(self.filler) + 1
        return (self.filler * repeats)[offset : offset + end - start]


Log = bytes | GeneratedLog


def log_length(log: Log) -> int:
    """How many bytes a log has."""
    return len(log) if isinstance(log, bytes) else log.total


def log_bytes(log: Log, start: int = 0, end: int | None = None) -> Iterator[bytes]:
    """A log's bytes ``[start, end)``, chunked."""
    if isinstance(log, bytes):
        stop = len(log) if end is None else end
        for at in range(start, stop, CHUNK):
            yield log[at : min(stop, at + CHUNK)]
    else:
        yield from log.read(start, end)


def buildkite_log(
    lines: list[str], *, command: str = "python -m pytest", exit_code: int = 1
) -> bytes:
    """``lines`` as the raw log of a Buildkite command job whose command exited ``exit_code``."""
    body = ["~~~ Preparing working directory", "$ cd /var/lib/buildkite-agent/builds/acme/trt"]
    body += ["$ git fetch -v --prune -- origin main", "~~~ Running commands"]
    body += [f"--- :python: {command}", f"$ {command}", *lines]
    if exit_code:
        body += [f"🚨 Error: The command exited with status {exit_code}", "^^^ +++"]
    stamped = [f"\x1b_bk;t={1785408900000 + 37 * i}\x07{line}" for i, line in enumerate(body)]
    return ("\r\n".join(stamped) + "\r\n").encode()


@dataclass
class FakeJob:
    """One job of a build and the log it wrote."""

    name: str
    log: Log = b""
    state: str = "failed"
    exit_status: int | None = 1
    soft_failed: bool = False
    type: str = "script"
    log_status: int = 200  # 404 or 410: the log is gone
    parallel: tuple[int, int] | None = None  # (index, total)
    id: str = field(default_factory=new_id)

    def json(self, build: FakeBuild, api_url: str, web_url: str) -> dict[str, Any]:
        """The Job object of the REST API and of ``job.*`` webhooks."""
        api = f"{api_url}{build.path}/jobs/{self.id}"
        return {
            "id": self.id,
            "graphql_id": f"Sm9iLS0t{self.id[:8]}",
            "type": self.type,
            "name": self.name,
            "step_key": self.name.lower().replace(" ", "-")[:40],
            "state": self.state,
            "web_url": f"{web_url}/{build.organization}/{build.pipeline}/builds/{build.number}#{self.id}",
            "log_url": f"{api}/log",
            "raw_log_url": f"{api}/log.txt",
            "command": "python -m pytest -q",
            "soft_failed": self.soft_failed,
            "exit_status": self.exit_status,
            "artifact_paths": "",
            "agent_query_rules": ["queue=gpu"],
            "created_at": WHEN,
            "scheduled_at": WHEN,
            "runnable_at": WHEN,
            "started_at": WHEN,
            "finished_at": DONE,
            "retried": False,
            "retried_in_job_id": None,
            "retries_count": None,
            "retry_type": None,
            "parallel_group_index": self.parallel[0] if self.parallel else None,
            "parallel_group_total": self.parallel[1] if self.parallel else None,
            "matrix": None,
            "cluster_id": None,
            "cluster_queue_id": None,
        }


@dataclass
class FakeBuild:
    """A build of a pipeline: what it built, its PR (if any), and its jobs."""

    organization: str
    pipeline: str
    number: int
    repository: str
    commit: str = "c" * 40
    branch: str = "main"
    state: str = "failed"
    pull_request: dict[str, str] | None = None  # {"id": "42", "base": "main", "repository": ...}
    jobs: list[FakeJob] = field(default_factory=list)
    rebuilt_from: FakeBuild | None = None
    id: str = field(default_factory=new_id)
    pipeline_id: str = field(default_factory=new_id)

    @property
    def path(self) -> str:
        """The build's path under the REST API."""
        return (
            f"/v2/organizations/{self.organization}/pipelines/{self.pipeline}/builds/{self.number}"
        )

    def pipeline_json(self, api_url: str, web_url: str) -> dict[str, Any]:
        """The pipeline, as a build and a webhook embed it."""
        api = f"{api_url}/v2/organizations/{self.organization}/pipelines/{self.pipeline}"
        return {
            "id": self.pipeline_id,
            "graphql_id": f"UGlwZWxpbmUtLS0{self.pipeline_id[:8]}",
            "url": api,
            "web_url": f"{web_url}/{self.organization}/{self.pipeline}",
            "name": self.pipeline.replace("-", " ").title(),
            "slug": self.pipeline,
            "repository": self.repository,
            "default_branch": "main",
            "provider": {
                "id": "github",
                "webhook_url": "",
                "settings": {"build_pull_requests": True},
            },
            "skip_queued_branch_builds": False,
            "skip_queued_branch_builds_filter": None,
            "cancel_running_branch_builds": False,
            "cancel_running_branch_builds_filter": None,
            "builds_url": f"{api}/builds",
            "badge_url": f"https://badge.buildkite.com/{self.pipeline_id.replace('-', '')}.svg",
            "created_at": "2025-01-02T03:04:05.000Z",
            "scheduled_builds_count": 0,
            "running_builds_count": 0,
            "scheduled_jobs_count": 0,
            "running_jobs_count": 0,
            "waiting_jobs_count": 0,
        }

    def json(self, api_url: str, web_url: str, *, jobs: bool = True) -> dict[str, Any]:
        """The Build object: with its jobs and pipeline (REST API) or without (webhooks)."""
        finished = self.state in ("passed", "failed", "canceled")
        built: dict[str, Any] = {
            "id": self.id,
            "graphql_id": f"QnVpbGQtLS0{self.id[:8]}",
            "url": f"{api_url}{self.path}",
            "web_url": f"{web_url}/{self.organization}/{self.pipeline}/builds/{self.number}",
            "number": self.number,
            "state": self.state,
            "blocked": False,
            "cancel_reason": None,
            "message": "Merge the dynamic-tree worker",
            "commit": self.commit,
            "branch": self.branch,
            "env": {},
            "source": "webhook" if self.rebuilt_from is None else "api",
            "creator": CREATOR,
            "created_at": WHEN,
            "scheduled_at": WHEN,
            "started_at": WHEN,
            "failing_at": DONE if self.state == "failed" else None,
            "finished_at": DONE if finished else None,
            "meta_data": {},
            "pull_request": dict(self.pull_request or {}),
            "rebuilt_from": None,
        }
        if self.rebuilt_from is not None:
            earlier = self.rebuilt_from
            built["rebuilt_from"] = {
                "id": earlier.id,
                "number": earlier.number,
                "url": f"{api_url}{earlier.path}",
            }
        if jobs:
            built["jobs"] = [job.json(self, api_url, web_url) for job in self.jobs]
            built["pipeline"] = self.pipeline_json(api_url, web_url)
        return built
