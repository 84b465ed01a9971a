"""The GitLab double's endpoints: method, path, handler, and the schema of its 2xx answer."""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.gitlab.projects import BOT, api_time
from tests.fakes.gitlab.server import FakeGitLab, Request, Route, Stream

P = r"/api/v4/projects/(?P<project>[^/]+)"


def _project(state: FakeGitLab, request: Request) -> tuple[int, Any]:
    assert request.project is not None
    return 200, request.project.json()


def _pipeline(state: FakeGitLab, request: Request) -> tuple[int, Any]:
    assert request.project is not None
    pipeline = request.project.pipelines.get(int(request.match["pipeline"]))
    if pipeline is None:
        return 404, {"message": "404 Not found"}
    return 200, request.project.pipeline_json(pipeline)


def _trace(state: FakeGitLab, request: Request) -> tuple[int, Any]:
    job = state.jobs.get(int(request.match["job"]))
    if job is None or request.project is None or job.project_id != request.project.id:
        return 404, {"message": "404 Job Not Found"}
    if job.trace_status != 200:
        return job.trace_status, {"message": f"{job.trace_status} Not found"}
    if job.trace_chunks is not None:
        return 200, Stream(job.trace_chunks(), job.trace_length)
    return 200, Stream([job.trace], len(job.trace))


def _merge_request(state: FakeGitLab, request: Request) -> tuple[int, Any]:
    assert request.project is not None
    found = request.project.merge_requests.get(int(request.match["iid"]))
    return (200, found) if found else (404, {"message": "404 Not found"})


def _merge_requests(state: FakeGitLab, request: Request) -> tuple[int, Any]:
    assert request.project is not None
    wanted = {k: request.query[k] for k in ("source_branch", "state") if k in request.query}
    return 200, [
        mr
        for mr in request.project.merge_requests.values()
        if all(mr[k] == v for k, v in wanted.items())
    ]


def _open_merge_request(state: FakeGitLab, request: Request) -> tuple[int, Any]:
    project, data = request.project, request.body or {}
    assert project is not None
    missing = [k for k in ("source_branch", "target_branch", "title") if not data.get(k)]
    if missing:
        return 400, {"message": f"{', '.join(missing)} is missing"}
    if project.branch_head(str(data["source_branch"])) is None:
        return 400, {"message": ["Source branch does not exist"]}
    for mr in project.merge_requests.values():
        if mr["state"] == "opened" and mr["source_branch"] == data["source_branch"]:
            message = (
                f"Another open merge request already exists for this source branch: !{mr['iid']}"
            )
            return 409, {"message": [message]}
    iid = len(project.merge_requests) + 1
    return 201, project.add_merge_request((iid, state.next_id()), data, BOT)


def _notes(state: FakeGitLab, request: Request) -> tuple[int, Any]:
    assert request.project is not None
    notes = request.project.notes.get(int(request.match["iid"]))
    return (200, list(notes)) if notes is not None else (404, {"message": "404 Not found"})


def _add_note(state: FakeGitLab, request: Request) -> tuple[int, Any]:
    project, iid = request.project, int(request.match["iid"])
    assert project is not None
    if iid not in project.notes:
        return 404, {"message": "404 Not found"}
    body = (request.body or {}).get("body")
    if not isinstance(body, str) or not body:
        return 400, {"message": "body is missing"}
    note = {
        "id": state.next_id(),
        "body": body,
        "author": BOT,
        "created_at": api_time(),
        "updated_at": api_time(),
        "system": False,
        "noteable_id": project.merge_requests[iid]["id"],
        "noteable_iid": iid,
        "noteable_type": "MergeRequest",
        "resolvable": False,
        "confidential": False,
        "internal": False,
    }
    project.notes[iid].append(note)
    return 201, note


STATES = frozenset({"pending", "running", "success", "failed", "canceled", "skipped"})


def _set_status(state: FakeGitLab, request: Request) -> tuple[int, Any]:
    project, data, sha = request.project, request.body or {}, request.match["sha"]
    assert project is not None
    if data.get("state") not in STATES:
        return 400, {"message": "state does not have a valid value"}
    status = {
        "id": state.next_id(),
        "sha": sha,
        "ref": data.get("ref"),
        "status": data["state"],
        "name": data.get("name") or data.get("context") or "default",
        "target_url": data.get("target_url"),
        "description": data.get("description"),
        "created_at": api_time(),
        "started_at": None,
        "finished_at": None,
        "allow_failure": False,
        "author": BOT,
    }
    project.statuses.append(status)
    return 201, status


def _route(method: str, path: str, handler: Any, schema: str | None) -> Route:
    return method, re.compile(P + path), handler, schema


ROUTES: list[Route] = [
    _route("GET", "", _project, "project"),
    _route("GET", r"/pipelines/(?P<pipeline>\d+)", _pipeline, "pipeline"),
    _route("GET", r"/jobs/(?P<job>\d+)/trace", _trace, None),
    _route("GET", r"/merge_requests", _merge_requests, "merge_request"),
    _route("POST", r"/merge_requests", _open_merge_request, "merge_request"),
    _route("GET", r"/merge_requests/(?P<iid>\d+)", _merge_request, "merge_request"),
    _route("GET", r"/merge_requests/(?P<iid>\d+)/notes", _notes, "note"),
    _route("POST", r"/merge_requests/(?P<iid>\d+)/notes", _add_note, "note"),
    _route("POST", r"/statuses/(?P<sha>[0-9a-f]{40})", _set_status, "commit_status"),
]
