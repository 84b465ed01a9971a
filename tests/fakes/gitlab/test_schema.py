"""The GitLab double's schema check: strict enough to catch drift, and wired into every route."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.fakes.gitlab.hooks import job_hook, pipeline_hook
from tests.fakes.gitlab.projects import BOT, FakeJob, api_time
from tests.fakes.gitlab.routes import ROUTES
from tests.fakes.gitlab.schema import SCHEMAS, validate
from tests.fakes.gitlab.server import TOKEN


def _note(**changes):
    note = {
        "id": 1, "body": "hi", "author": dict(BOT), "created_at": "2026-07-30T10:55:00.000Z",
        "system": False, "noteable_id": 9, "noteable_iid": 1, "noteable_type": "MergeRequest",
    }  # fmt: skip
    return {**note, **changes}


def test_a_valid_object_has_no_errors():
    assert validate("note", _note()) == []
    assert validate("note", [_note(), _note(id=2)]) == []


def test_an_invented_field_is_an_error_at_any_depth():
    assert validate("note", _note(emoji="x")) == [".emoji: not in note"]
    assert validate("note", _note(author={**BOT, "karma": 7})) == [".author.karma: not in user"]


def test_a_missing_required_field_or_a_wrong_type_is_an_error():
    note = _note()
    del note["system"]
    assert validate("note", note) == [".system: required in note"]
    assert validate("note", _note(id="1")) == [".id: '1' is not int"]
    assert validate("note", _note(id=True)) == [".id: True is not an integer"]
    assert validate("note", [_note(), _note(noteable_type="PR")])[0].startswith("[1].noteable_type")


def test_timestamps_and_shas_must_be_in_gitlabs_format():
    assert validate("note", _note(created_at="2026-07-30T10:55:00Z"))[0].startswith(".created_at")
    assert validate("note", _note(created_at=api_time())) == []
    status = {
        "id": 1, "sha": "A" * 40, "ref": None, "status": "failed", "name": "n", "target_url": None,
        "description": None, "created_at": api_time(), "author": dict(BOT),
    }  # fmt: skip
    assert validate("commit_status", status) == [
        f".sha: {'A' * 40!r} does not match [0-9a-f]{{40}}"
    ]
    assert validate("commit_status", {**status, "sha": "a" * 40, "status": "error"})[0].startswith(
        ".status:"
    )


def test_every_route_declares_the_schema_of_its_json_answer():
    assert {schema for *_, schema in ROUTES if schema} <= set(SCHEMAS)
    assert [path.pattern for _, path, _, schema in ROUTES if schema is None] == [
        r"/api/v4/projects/(?P<project>[^/]+)/jobs/(?P<job>\d+)/trace"  # text, not JSON
    ]


def test_the_doubles_answers_and_hooks_are_checked(gitlab_api):
    project = gitlab_api.new_project("gpu/trt")
    job = FakeJob("unit", trace=b"log\n")
    pipeline = gitlab_api.add_pipeline(project, sha="c" * 40, ref="main", jobs=[job])
    assert pipeline_hook(gitlab_api, project, pipeline)["builds"][0]["id"] == job.id
    assert job_hook(gitlab_api, job)["pipeline_id"] == pipeline["id"]
    request = urllib.request.Request(
        f"{gitlab_api.url}/api/v4/projects/gpu%2Ftrt/pipelines/{pipeline['id']}",
        headers={"PRIVATE-TOKEN": TOKEN},
    )
    with urllib.request.urlopen(request) as answer:
        assert json.load(answer)["sha"] == "c" * 40
    assert gitlab_api.schema_errors == []
    # A route answering outside its schema is recorded (and fails the test at teardown).
    gitlab_api.check_schema("GET /x", "pipeline", 200, {"id": 1})
    assert gitlab_api.schema_errors[0].startswith("GET /x (pipeline).iid: required in pipeline")
    gitlab_api.schema_errors.clear()


def test_a_request_without_the_token_is_refused(gitlab_api):
    request = urllib.request.Request(f"{gitlab_api.url}/api/v4/projects/1")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request)
    assert refused.value.code == 401
