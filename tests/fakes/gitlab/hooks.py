"""Webhook payloads the GitLab double sends, in the documented shapes of GitLab's Pipeline and
Job events, checked against ``schema.py`` as they are built."""

from __future__ import annotations

from typing import Any

from tests.fakes.gitlab.projects import FakeJob, FakeProject, hook_time
from tests.fakes.gitlab.schema import validate
from tests.fakes.gitlab.server import FakeGitLab

USER = {"id": 3, "name": "Alice", "username": "alice", "avatar_url": "https://gitlab.invalid/a.png"}


def checked(schema: str, payload: dict[str, Any]) -> dict[str, Any]:
    """``payload``, once it validates as ``schema`` (an AssertionError says what is off)."""
    problems = validate(schema, payload)
    assert not problems, f"{schema} payload off its schema: {problems}"
    return payload


def _project(project: FakeProject) -> dict[str, Any]:
    return {
        "id": project.id,
        "name": project.path.rsplit("/", 1)[-1],
        "description": None,
        "web_url": project.web_url,
        "avatar_url": None,
        "git_ssh_url": f"git@gitlab.invalid:{project.path}.git",
        "git_http_url": f"{project.web_url}.git",
        "namespace": project.path.split("/", 1)[0],
        "visibility_level": 0,
        "path_with_namespace": project.path,
        "default_branch": project.default_branch,
        "ci_config_path": None,
    }


def _build(job: FakeJob) -> dict[str, Any]:
    return {
        "id": job.id,
        "stage": job.stage,
        "name": job.name,
        "status": job.status,
        "created_at": hook_time(),
        "started_at": hook_time(),
        "finished_at": hook_time(),
        "duration": 12.5,
        "queued_duration": 0.4,
        "failure_reason": "script_failure" if job.status == "failed" else None,
        "when": "on_success",
        "manual": False,
        "allow_failure": job.allow_failure,
        "user": USER,
        "runner": None,
        "artifacts_file": {"filename": None, "size": None},
        "environment": None,
    }


def pipeline_hook(
    state: FakeGitLab, project: FakeProject, pipeline: dict[str, Any]
) -> dict[str, Any]:
    """The Pipeline Hook of a finished pipeline (with its merge request, when it ran for one)."""
    failed = any(job.status == "failed" for job in pipeline["jobs"])
    merge_request = project.merge_requests.get(pipeline["mr_iid"] or 0)
    return checked(
        "Pipeline Hook",
        {
            "object_kind": "pipeline",
            "object_attributes": {
                "id": pipeline["id"],
                "iid": pipeline["iid"],
                "name": None,
                "ref": pipeline["ref"],
                "tag": False,
                "sha": pipeline["sha"],
                "before_sha": "0" * 40,
                "source": "merge_request_event" if merge_request else "push",
                "status": "failed" if failed else "success",
                "detailed_status": "failed" if failed else "passed",
                "stages": sorted({job.stage for job in pipeline["jobs"]}),
                "created_at": hook_time(),
                "finished_at": hook_time(),
                "duration": 63,
                "queued_duration": 1,
                "variables": [],
                "url": f"{project.web_url}/-/pipelines/{pipeline['id']}",
            },
            "merge_request": _hook_merge_request(merge_request),
            "user": USER,
            "project": _project(project),
            "commit": {"id": pipeline["sha"], "message": "Add the workers", "url": project.web_url},
            "builds": [_build(job) for job in pipeline["jobs"]],
        },
    )


def _hook_merge_request(merge_request: dict[str, Any] | None) -> dict[str, Any] | None:
    if merge_request is None:
        return None
    return {
        "id": merge_request["id"],
        "iid": merge_request["iid"],
        "title": merge_request["title"],
        "source_branch": merge_request["source_branch"],
        "source_project_id": merge_request["source_project_id"],
        "target_branch": merge_request["target_branch"],
        "target_project_id": merge_request["target_project_id"],
        "state": merge_request["state"],
        "merge_status": "can_be_merged",
        "detailed_merge_status": "mergeable",
        "url": merge_request["web_url"],
    }


def job_hook(state: FakeGitLab, job: FakeJob) -> dict[str, Any]:
    """The Job Hook GitLab sends when ``job`` finished."""
    project = state.projects[job.project_id]
    pipeline = project.pipelines[job.pipeline_id]
    return checked(
        "Job Hook",
        {
            "object_kind": "build",
            "ref": pipeline["ref"],
            "tag": False,
            "before_sha": "0" * 40,
            "sha": pipeline["sha"],
            "retries_count": 0,
            "build_id": job.id,
            "build_name": job.name,
            "build_stage": job.stage,
            "build_status": job.status,
            "build_created_at": hook_time(),
            "build_started_at": hook_time(),
            "build_finished_at": hook_time(),
            "build_duration": 12.5,
            "build_queued_duration": 0.4,
            "build_allow_failure": job.allow_failure,
            "build_failure_reason": "script_failure",
            "pipeline_id": pipeline["id"],
            "project_id": project.id,
            "project_name": project.path.replace("/", " / "),
            "user": USER,
            "commit": {"id": pipeline["id"], "sha": pipeline["sha"], "status": "failed"},
            "repository": {"name": project.path.rsplit("/", 1)[-1], "homepage": project.web_url},
            "project": _project(project),
            "runner": None,
            "environment": None,
        },
    )
