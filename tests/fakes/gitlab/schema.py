"""A compact schema of the GitLab REST API and webhooks, for the parts repairbot uses.

Written by hand from GitLab's published API documentation (REST ``/api/v4``: Projects, Jobs,
Pipelines, Merge requests, Notes, Commits → "Set the pipeline status of a commit") and its
webhook events documentation (Pipeline events, Job events). Each object lists the fields GitLab
documents that repairbot or python-gitlab reads, or that the double sends: a field outside its
object's list is an error, as is a missing required one, a wrong type or a value outside an
enum. Objects marked ``open`` let GitLab's many other fields through.

A type is a Python type, a tuple of them (``NoneType`` for a nullable field), an enum (a
frozenset of strings), an object (a ``Shape``), a list of one, or a timestamp format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

NONE = type(None)
# The REST API writes ISO 8601 with milliseconds; webhooks write "2026-07-30 10:55:00 UTC".
API_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
HOOK_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")
SHA = re.compile(r"[0-9a-f]{40}")
JOB_STATUSES = frozenset(
    {"created", "pending", "running", "failed", "success", "canceled", "skipped", "manual"}
)
PIPELINE_STATUSES = JOB_STATUSES | {"waiting_for_resource", "preparing", "scheduled"}
STATUS_STATES = frozenset({"pending", "running", "success", "failed", "canceled", "skipped"})


@dataclass(frozen=True)
class Shape:
    """An object: required and optional fields with their types."""

    name: str
    required: dict[str, Any]
    optional: dict[str, Any] = field(default_factory=dict)
    open: bool = False


@dataclass(frozen=True)
class ListOf:
    """A JSON array of one type."""

    item: Any


USER = Shape(
    "user",
    {"id": int, "username": str, "name": str},
    {"state": str, "avatar_url": (str, NONE), "web_url": str, "email": (str, NONE)},
)
PROJECT = Shape(
    "project",
    {
        "id": int,
        "name": str,
        "path": str,
        "path_with_namespace": str,
        "default_branch": (str, NONE),
        "web_url": str,
    },
    {"description": (str, NONE), "http_url_to_repo": str, "created_at": API_TIME},
    open=True,  # "Get a single project" answers some 100 more fields
)
PIPELINE = Shape(
    "pipeline",
    {
        "id": int,
        "iid": int,
        "project_id": int,
        "sha": SHA,
        "ref": str,
        "status": PIPELINE_STATUSES,
        "source": str,
        "web_url": str,
    },
    {"created_at": API_TIME, "updated_at": API_TIME, "before_sha": str, "tag": bool},
    open=True,
)
MERGE_REQUEST = Shape(
    "merge_request",
    {
        "id": int,
        "iid": int,
        "project_id": int,
        "title": str,
        "description": (str, NONE),
        "state": frozenset({"opened", "closed", "locked", "merged"}),
        "source_branch": str,
        "target_branch": str,
        "source_project_id": int,
        "target_project_id": int,
        "sha": (SHA, NONE),
        "web_url": str,
        "author": USER,
    },
    {"created_at": API_TIME, "updated_at": API_TIME, "draft": bool, "merged_at": (str, NONE)},
)
NOTE = Shape(
    "note",
    {
        "id": int,
        "body": str,
        "author": USER,
        "created_at": API_TIME,
        "system": bool,
        "noteable_id": int,
        "noteable_iid": int,
        "noteable_type": frozenset({"MergeRequest", "Issue", "Commit", "Snippet"}),
    },
    {"updated_at": API_TIME, "resolvable": bool, "confidential": bool, "internal": bool},
)
COMMIT_STATUS = Shape(
    "commit_status",
    {
        "id": int,
        "sha": SHA,
        "ref": (str, NONE),
        "status": STATUS_STATES,
        "name": str,
        "target_url": (str, NONE),
        "description": (str, NONE),
        "created_at": API_TIME,
        "author": USER,
    },
    {"started_at": (str, NONE), "finished_at": (str, NONE), "allow_failure": bool},
)
HOOK_PROJECT = Shape(
    "hook project",
    {"id": int, "name": str, "web_url": str, "path_with_namespace": str},
    {
        "description": (str, NONE),
        "avatar_url": (str, NONE),
        "git_ssh_url": str,
        "git_http_url": str,
        "namespace": str,
        "visibility_level": int,
        "default_branch": (str, NONE),
        "ci_config_path": (str, NONE),
    },
)
HOOK_USER = Shape("hook user", {"id": int, "name": str, "username": str}, {"avatar_url": str})
HOOK_BUILD = Shape(
    "pipeline hook build",
    {"id": int, "stage": str, "name": str, "status": JOB_STATUSES, "allow_failure": bool},
    {
        "created_at": HOOK_TIME,
        "started_at": (HOOK_TIME, NONE),
        "finished_at": (HOOK_TIME, NONE),
        "duration": (float, int, NONE),
        "queued_duration": (float, int, NONE),
        "failure_reason": (str, NONE),
        "when": str,
        "manual": bool,
        "user": HOOK_USER,
        "runner": (dict, NONE),
        "artifacts_file": dict,
        "environment": (dict, NONE),
    },
)
PIPELINE_HOOK = Shape(
    "Pipeline Hook",
    {
        "object_kind": frozenset({"pipeline"}),
        "object_attributes": Shape(
            "pipeline hook attributes",
            {
                "id": int,
                "iid": int,
                "ref": str,
                "tag": bool,
                "sha": SHA,
                "status": PIPELINE_STATUSES,
            },
            {
                "name": (str, NONE),
                "before_sha": str,
                "source": str,
                "detailed_status": str,
                "stages": ListOf(str),
                "created_at": HOOK_TIME,
                "finished_at": (HOOK_TIME, NONE),
                "duration": (int, NONE),
                "queued_duration": (int, NONE),
                "variables": ListOf(dict),
                "url": str,
            },
        ),
        "merge_request": (
            Shape(
                "pipeline hook merge request",
                {"id": int, "iid": int, "title": str, "source_branch": str, "target_branch": str},
                {
                    "source_project_id": int,
                    "target_project_id": int,
                    "state": str,
                    "merge_status": str,
                    "detailed_merge_status": str,
                    "url": str,
                },
            ),
            NONE,
        ),
        "project": HOOK_PROJECT,
        "builds": ListOf(HOOK_BUILD),
    },
    {"user": HOOK_USER, "commit": dict, "source_pipeline": dict},
)
JOB_HOOK = Shape(
    "Job Hook",
    {
        "object_kind": frozenset({"build"}),
        "ref": str,
        "tag": bool,
        "sha": SHA,
        "build_id": int,
        "build_name": str,
        "build_stage": str,
        "build_status": JOB_STATUSES,
        "build_allow_failure": bool,
        "pipeline_id": int,
        "project_id": int,
        "project_name": str,
    },
    {
        "before_sha": str,
        "retries_count": int,
        "build_created_at": HOOK_TIME,
        "build_started_at": (HOOK_TIME, NONE),
        "build_finished_at": (HOOK_TIME, NONE),
        "build_duration": (float, int, NONE),
        "build_queued_duration": (float, int, NONE),
        "build_failure_reason": str,
        "user": HOOK_USER,
        "commit": dict,
        "repository": dict,
        "project": HOOK_PROJECT,
        "runner": (dict, NONE),
        "environment": (dict, NONE),
    },
)
SCHEMAS = {
    shape.name: shape
    for shape in (PROJECT, PIPELINE, MERGE_REQUEST, NOTE, COMMIT_STATUS, PIPELINE_HOOK, JOB_HOOK)
}


def validate(schema: str, payload: Any) -> list[str]:
    """What is wrong with ``payload`` as a ``schema`` (a list: each item); empty when valid."""
    shape = SCHEMAS.get(schema)
    if shape is None:
        raise ValueError(f"no GitLab schema named {schema!r}")
    problems: list[str] = []
    if isinstance(payload, list):
        for index, item in enumerate(payload):
            _check(shape, item, f"[{index}]", problems)
    else:
        _check(shape, payload, "", problems)
    return problems


def _check(kind: Any, value: Any, path: str, problems: list[str]) -> None:
    if isinstance(kind, tuple):
        if not any(not _mismatch(option, value) for option in kind):
            problems.append(f"{path or '.'}: {value!r:.80} is none of {_names(kind)}")
        else:
            option = next(option for option in kind if not _mismatch(option, value))
            _check(option, value, path, problems)
        return
    mismatch = _mismatch(kind, value)
    if mismatch:
        problems.append(f"{path or '.'}: {mismatch}")
    elif isinstance(kind, Shape):
        _check_object(kind, value, path, problems)
    elif isinstance(kind, ListOf):
        for index, item in enumerate(value):
            _check(kind.item, item, f"{path}[{index}]", problems)


def _check_object(shape: Shape, value: dict[str, Any], path: str, problems: list[str]) -> None:
    for key, kind in shape.required.items():
        if key not in value:
            problems.append(f"{path}.{key}: required in {shape.name}")
        else:
            _check(kind, value[key], f"{path}.{key}", problems)
    for key, item in value.items():
        if key in shape.optional:
            _check(shape.optional[key], item, f"{path}.{key}", problems)
        elif key not in shape.required and not shape.open:
            problems.append(f"{path}.{key}: not in {shape.name}")


def _mismatch(kind: Any, value: Any) -> str | None:
    """Why ``value`` is not of ``kind`` at the top level (None: it is)."""
    if isinstance(kind, Shape):
        return None if isinstance(value, dict) else f"{value!r:.80} is not an object"
    if isinstance(kind, ListOf):
        return None if isinstance(value, list) else f"{value!r:.80} is not an array"
    if isinstance(kind, frozenset):
        return None if value in kind else f"{value!r:.80} is not one of {sorted(kind)}"
    if isinstance(kind, re.Pattern):
        ok = isinstance(value, str) and kind.fullmatch(value)
        return None if ok else f"{value!r:.80} does not match {kind.pattern}"
    if kind is float:  # JSON numbers: an int is a valid float, a bool is neither
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return None if ok else f"{value!r:.80} is not a number"
    if isinstance(value, bool) and kind is int:
        return f"{value!r} is not an integer"
    return None if isinstance(value, kind) else f"{value!r:.80} is not {kind.__name__}"


def _names(kinds: tuple[Any, ...]) -> str:
    return ", ".join(
        k.name if isinstance(k, Shape) else getattr(k, "pattern", getattr(k, "__name__", str(k)))
        for k in kinds
    )
