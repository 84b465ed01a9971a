"""Buildkite payloads as values: what is kept, what is dropped as not Buildkite's shape, and
which jobs count as failed."""

from __future__ import annotations

import copy

import pytest

from bot.forges.buildkite.events import (
    BuildRef,
    build_of_key,
    failed_jobs,
    finished_build,
    finished_job,
)
from tests.fakes.buildkite.builds import FakeBuild, FakeJob

REPOSITORY = "git@github.com:acme/trt.git"


@pytest.fixture
def payload(buildkite_api):
    job = FakeJob("pytest", b"log\n", parallel=(1, 4))
    build = FakeBuild("acme", "trt-gpu", 88, REPOSITORY, jobs=[job], pull_request={"id": "31"})
    return buildkite_api.job_event(build, job)


def test_a_job_finished_payload_is_read_whole(payload):
    job = finished_job(payload)
    assert job is not None and job.failed
    assert job.build.ref == BuildRef("acme", "trt-gpu", 88)
    assert job.build.pull_request is not None and job.build.pull_request.number == 31
    assert job.build.pull_request.base is None
    assert job.pipeline_label == "acme/trt-gpu #88 / pytest (2/4)" and job.name == "pytest"
    assert (
        job.log_path == f"/v2/organizations/acme/pipelines/trt-gpu/builds/88/jobs/{job.job_id}/log"
    )
    assert job.web_url is not None and job.web_url.startswith("https://buildkite.com/acme/")
    assert build_of_key(job.key) == job.build.ref


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("pipeline", "slug"), "../../admin"),
        (("pipeline", "slug"), "trt gpu"),
        (("build", "url"), "https://api.buildkite.com/v2/organizations/a%2Fb/pipelines/x/builds/1"),
        (("build", "number"), True),
        (("build", "number"), "88"),
        (("build", "number"), 0),
        (("build", "id"), "not-a-uuid"),
        (("job", "id"), "../log"),
    ],
)
def test_ids_and_slugs_of_another_shape_are_not_used(payload, where, value):
    hostile = copy.deepcopy(payload)
    hostile[where[0]][where[1]] = value
    if where == ("build", "url"):
        hostile["pipeline"]["url"] = value
    assert finished_job(hostile) is None


@pytest.mark.parametrize(
    ("field", "value", "kept"),
    [
        ("commit", "HEAD", None),  # an API-triggered build may name a ref, not a commit
        ("commit", "abc1234", "abc1234"),
        ("commit", "c" * 40 + "; rm -rf /", None),
    ],
)
def test_a_commit_is_kept_only_when_it_is_one(payload, field, value, kept):
    payload["build"][field] = value
    job = finished_job(payload)
    assert job is not None and job.build.commit == kept


@pytest.mark.parametrize(
    ("pull_request", "number"),
    [({}, None), (None, None), ({"id": "7"}, 7), ({"id": 7}, 7), ({"id": "x7"}, None)],
)
def test_the_pull_request_id_is_buildkites_string_or_a_number(payload, pull_request, number):
    payload["build"]["pull_request"] = pull_request
    job = finished_job(payload)
    assert job is not None
    assert (job.build.pull_request.number if job.build.pull_request else None) == number


def test_a_job_link_that_is_not_http_is_dropped(payload):
    payload["job"]["web_url"] = "javascript:alert(1)"
    job = finished_job(payload)
    assert job is not None and job.web_url is None


def test_the_build_api_answer_gives_the_failed_jobs_as_sent(buildkite_api):
    jobs = [
        FakeJob("a"),
        FakeJob("b", state="passed", exit_status=0),
        FakeJob("c", state="passed", exit_status=2),  # exited non-zero: failed, whatever the state
        FakeJob("d", soft_failed=True),
        FakeJob("e", type="manual", exit_status=None, state="passed"),
    ]
    fake = FakeBuild("acme", "trt-gpu", 5, REPOSITORY, jobs=jobs)
    build = finished_build(buildkite_api.build_event(fake))
    assert build is not None
    found = failed_jobs(build, fake.json(buildkite_api.url, "https://buildkite.com"))
    assert [job.name for _, job in found] == ["a", "c"]
    assert [raw["id"] for raw, _ in found] == [jobs[0].id, jobs[2].id]
    assert failed_jobs(build, {"jobs": "none"}) == [] and failed_jobs(build, {}) == []


def test_keys_too_long_for_the_column_are_digests_and_name_no_build():
    assert build_of_key("buildkite:sha256:" + "0" * 64) is None
    assert build_of_key("github-actions:acme/trt:job-1:attempt-1") is None
    assert build_of_key(None) is None


def test_a_key_too_long_for_the_column_is_a_digest(payload):
    org, slug = "o" * 100, "p" * 100
    payload["pipeline"]["slug"] = slug
    payload["build"]["url"] = f"https://api.buildkite.com/v2/organizations/{org}/pipelines/{slug}"
    job = finished_job(payload)
    assert job is not None and len(job.key) <= 200
    assert job.key.startswith("buildkite:sha256:") and build_of_key(job.key) is None
