"""Buildkite's documented REST objects and webhook bodies, as a check on the Buildkite double.

Written by hand from Buildkite's REST API documentation (Builds API: the "Build data model" and
"Job data model" tables and the "Get a build" / "Rebuild a build" examples; Pipelines in those
examples) and its webhook documentation (build and job events: ``event``, ``build``,
``pipeline``, ``sender``, and ``job`` for job events; the build in a webhook has no ``jobs``).
Buildkite publishes no machine-readable description of them, so these models are the contract:
every key must be one Buildkite documents for that object (``extra="forbid"``), every value of
the documented type, checked strictly (no ``"5"`` for ``5``), enums and timestamps in Buildkite's
own form (``2026-07-30T10:55:00.000Z``). Objects the documentation leaves open (``env``,
``meta_data``, ``matrix``, a provider's ``settings``) are plain dicts.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

Timestamp = Annotated[str, StringConstraints(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")]
Uuid = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$")]
BuildState = Literal[
    "scheduled", "running", "passed", "failed", "blocked", "canceled", "canceling", "skipped",
    "not_run", "waiting", "waiting_failed", "failing",
]  # fmt: skip
JobState = Literal[
    "pending", "waiting", "waiting_failed", "blocked", "blocked_failed", "unblocked",
    "unblocked_failed", "scheduled", "assigned", "accepted", "running", "passed", "failed",
    "timed_out", "timing_out", "canceled", "canceling", "skipped", "broken", "expired", "limited",
]  # fmt: skip


class Documented(BaseModel):
    """Only documented keys, strictly typed."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Creator(Documented):
    id: Uuid
    graphql_id: str | None = None
    name: str
    email: str
    avatar_url: str
    created_at: Timestamp


class Agent(Documented):
    id: Uuid
    graphql_id: str | None = None
    url: str
    web_url: str | None = None
    name: str
    connection_state: str | None = None
    hostname: str | None = None
    ip_address: str | None = None
    user_agent: str | None = None
    creator: Creator | None = None
    created_at: Timestamp | None = None


class RetrySource(Documented):
    job_id: Uuid
    retry_type: str


class TriggeredBuild(Documented):
    id: Uuid
    number: int
    url: str
    web_url: str


class Job(Documented):
    """The Job data model (REST API; the ``job`` of a job webhook)."""

    id: Uuid
    graphql_id: str
    type: Literal["script", "waiter", "manual", "trigger"]
    name: str | None = None
    step_key: str | None = None
    group_key: str | None = None
    step: dict[str, Any] | None = None
    priority: dict[str, Any] | None = None
    agent_query_rules: list[str] | None = None
    state: JobState
    build_url: str | None = None
    web_url: str
    log_url: str | None = None
    raw_log_url: str | None = None
    artifact_url: str | None = None
    command: str | None = None
    soft_failed: bool = False
    exit_status: int | None = None
    signal: str | None = None
    signal_reason: str | None = None
    promised_exit_status: int | None = None
    promised_exit_status_at: Timestamp | None = None
    artifact_paths: str | None = None
    agent: Agent | None = None
    created_at: Timestamp
    scheduled_at: Timestamp | None = None
    runnable_at: Timestamp | None = None
    started_at: Timestamp | None = None
    finished_at: Timestamp | None = None
    retried: bool = False
    retried_in_job_id: Uuid | None = None
    retries_count: int | None = None
    retry_source: RetrySource | None = None
    retry_type: str | None = None
    parallel_group_index: int | None = None
    parallel_group_total: int | None = None
    matrix: dict[str, Any] | None = None
    cluster_id: Uuid | None = None
    cluster_url: str | None = None
    cluster_queue_id: Uuid | None = None
    cluster_queue_url: str | None = None
    async_: bool | None = Field(default=None, alias="async")
    triggered_build: TriggeredBuild | None = None


class Provider(Documented):
    id: str
    webhook_url: str
    settings: dict[str, Any] | None = None


class Pipeline(Documented):
    """A pipeline as the Build API's examples and webhooks embed it."""

    id: Uuid
    graphql_id: str
    url: str
    web_url: str
    name: str
    slug: str
    repository: str
    branch_configuration: str | None = None
    default_branch: str | None = None
    provider: Provider
    skip_queued_branch_builds: bool
    skip_queued_branch_builds_filter: str | None
    cancel_running_branch_builds: bool
    cancel_running_branch_builds_filter: str | None
    builds_url: str
    badge_url: str
    created_at: Timestamp
    scheduled_builds_count: int
    running_builds_count: int
    scheduled_jobs_count: int
    running_jobs_count: int
    waiting_jobs_count: int


class PullRequest(Documented):
    """A build's ``pull_request``: ``{}`` for a branch build; the id is a string."""

    id: str | None = None
    base: str | None = None
    repository: str | None = None


class RebuiltFrom(Documented):
    id: Uuid
    number: int
    url: str


class Build(Documented):
    """The Build data model (REST API; the ``build`` of a webhook, without ``jobs``)."""

    id: Uuid
    graphql_id: str
    url: str
    web_url: str
    number: int = Field(ge=1)
    state: BuildState
    blocked: bool
    cancel_reason: str | None
    message: str | None
    commit: str
    branch: str
    env: dict[str, Any]
    source: Literal["webhook", "api", "ui", "trigger_job", "schedule"]
    creator: Creator | None
    jobs: list[Job] | None = None
    created_at: Timestamp
    scheduled_at: Timestamp
    started_at: Timestamp | None
    failing_at: Timestamp | None
    finished_at: Timestamp | None
    meta_data: dict[str, Any]
    pull_request: PullRequest | None
    rebuilt_from: RebuiltFrom | None = None
    pipeline: Pipeline | None = None


class Sender(Documented):
    id: Uuid
    name: str


class BuildEvent(Documented):
    """A ``build.*`` webhook body."""

    event: Literal["build.scheduled", "build.running", "build.failing", "build.finished"]
    build: Build
    pipeline: Pipeline
    sender: Sender


class JobEvent(Documented):
    """A ``job.*`` webhook body."""

    event: Literal["job.scheduled", "job.started", "job.finished", "job.activated"]
    job: Job
    build: Build
    pipeline: Pipeline
    sender: Sender


MODELS: dict[str, type[BaseModel]] = {
    "build": Build,
    "build-event": BuildEvent,
    "job-event": JobEvent,
}


def validate(schema: str, payload: Any) -> list[str]:
    """What is wrong with ``payload`` as a ``schema`` (a key of ``MODELS``); empty when valid."""
    try:
        MODELS[schema].model_validate_json(json.dumps(payload), strict=True)
    except ValidationError as error:
        return [
            "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"]) + f": {e['msg']}"
            for e in error.errors()
        ]
    extra = []
    if schema.endswith("-event") and payload.get("build", {}).get("jobs") is not None:
        extra.append(".build.jobs: a webhook's build carries no jobs")
    return extra
