"""The Buildkite double's schema check can fail: what Buildkite does not document is caught."""

from __future__ import annotations

import copy

import pytest

from tests.fakes.buildkite.builds import FakeBuild, FakeJob
from tests.fakes.buildkite.schema import validate
from tests.fakes.buildkite.server import WEB_URL

API = "https://api.buildkite.com"


@pytest.fixture
def build() -> FakeBuild:
    pull = {"id": "12", "base": "main", "repository": "https://github.com/acme/trt.git"}
    return FakeBuild(
        "acme",
        "trt-gpu",
        3,
        "git@github.com:acme/trt.git",
        pull_request=pull,
        jobs=[FakeJob("pytest")],
    )


def test_the_doubles_own_objects_are_valid(build):
    assert validate("build", build.json(API, WEB_URL)) == []
    event = {
        "event": "job.finished",
        "job": build.jobs[0].json(build, API, WEB_URL),
        "build": build.json(API, WEB_URL, jobs=False),
        "pipeline": build.pipeline_json(API, WEB_URL),
        "sender": {"id": "8a7693f8-dbae-4783-9137-84090fce9045", "name": "Ada"},
    }
    assert validate("job-event", event) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda b: b.update(head_sha="c" * 40), ".head_sha: Extra inputs are not permitted"),
        (lambda b: b.update(number="3"), ".number: Input should be a valid integer"),
        (lambda b: b.update(state="success"), ".state: Input should be"),
        (lambda b: b.update(created_at="2026-07-30T10:55:00Z"), ".created_at: String should match"),
        (lambda b: b["jobs"][0].update(exit_status="1"), ".jobs[0].exit_status: Input should be"),
        (lambda b: b["jobs"][0].update(conclusion="failure"), ".jobs[0].conclusion: Extra inputs"),
        (lambda b: b["pull_request"].update(id=12), ".pull_request.id: Input should be a valid"),
        (lambda b: b.pop("commit"), ".commit: Field required"),
    ],
)
def test_what_buildkite_does_not_document_is_caught(build, change, problem):
    body = copy.deepcopy(build.json(API, WEB_URL))
    change(body)
    problems = validate("build", body)
    assert any(found.startswith(problem) for found in problems), problems


def test_a_webhook_build_with_jobs_is_caught(build):
    event = {
        "event": "build.finished",
        "build": build.json(API, WEB_URL),  # with jobs: the REST form, not the webhook's
        "pipeline": build.pipeline_json(API, WEB_URL),
        "sender": {"id": "8a7693f8-dbae-4783-9137-84090fce9045", "name": "Ada"},
    }
    event["build"].pop("pipeline")
    assert validate("build-event", event) == [".build.jobs: a webhook's build carries no jobs"]
