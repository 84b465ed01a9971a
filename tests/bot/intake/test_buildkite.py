"""Failed Buildkite jobs (``job.finished``, ``build.finished``) → their logs → reports.

The Buildkite double (tests/fakes/buildkite) serves the builds with their jobs and the jobs' raw
logs, written as the agent writes them around a real pytest run; webhooks are posted, signed, to
the real app and processed by the real task, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from bot.app import create_app
from bot.db.models import CiFailure, Delivery
from bot.db.session import session_scope
from bot.forges.buildkite.events import finished_build
from bot.intake.buildkite import delivery_id, repository_for
from bot.intake.process_delivery import handle_delivery
from bot.pipeline.task_base import TransientError
from bot.pipeline.triage import triage
from tests.fakes.buildkite.builds import FakeBuild, FakeJob, buildkite_log
from tests.fakes.buildkite.deliveries import deliver_and_process, post_webhook

PYTEST_RUN = (
    Path(__file__).parents[2] / "fixtures" / "logs" / "py312" / "contract_override.console.txt"
).read_text()
LOG = buildkite_log(PYTEST_RUN.splitlines())
REPOSITORY = "git@github.com:acme/trt.git"


def _build(buildkite_api, *jobs: FakeJob, **fields) -> FakeBuild:
    build = FakeBuild("acme", "trt-gpu", 412, REPOSITORY, jobs=list(jobs), **fields)
    return buildkite_api.add_build(build)


def _reports(settings) -> list[tuple]:
    with session_scope(settings.resolved_database_url) as session:
        return [
            (r.idempotency_key, r.pipeline, r.repository, r.pr_number, r.head_sha, r.base_ref)
            for r in session.scalars(select(CiFailure).order_by(CiFailure.id))
        ]


def _outcomes(settings) -> list[tuple[str, str]]:
    with session_scope(settings.resolved_database_url) as session:
        query = select(Delivery).where(Delivery.source == "buildkite").order_by(Delivery.id)
        return [(d.key, d.outcome) for d in session.scalars(query)]


def test_a_failed_job_becomes_one_console_report_of_its_log(bk_settings, buildkite_api):
    job = FakeJob("H100_PCIe-PyTorch-1", LOG)
    build = _build(buildkite_api, job)
    answer, notes = deliver_and_process(
        bk_settings, "job.finished", buildkite_api.job_event(build, job)
    )
    assert answer["status"] == "accepted", answer
    key = f"buildkite:acme/pipelines/trt-gpu/builds/412/jobs/{job.id}"
    assert _reports(bk_settings) == [
        (key, "acme/trt-gpu #412 / H100_PCIe-PyTorch-1", "acme/trt", None, "c" * 40, "main")
    ], notes
    (log_call,) = buildkite_api.calls_to("GET", r"/jobs/.*/log$")
    assert log_call.headers["accept"] == "text/plain"
    assert log_call.headers["authorization"].startswith("Bearer bkua_")
    with session_scope(bk_settings.resolved_database_url) as session:
        report = session.scalars(select(CiFailure)).one()
        assert report.stage == "H100_PCIe-PyTorch-1"  # a TensorRT-LLM stage name: its GPU type
        assert session.get_one(Delivery, report.delivery_id).content() == LOG


def test_the_report_is_classified_like_a_posted_console_log(bk_settings, buildkite_api):
    job = FakeJob("unit tests", LOG)
    build = _build(buildkite_api, job)
    deliver_and_process(bk_settings, "job.finished", buildkite_api.job_event(build, job))
    with session_scope(bk_settings.resolved_database_url) as session:
        report_id = session.scalars(select(CiFailure.id)).one()
    triage.apply(args=[report_id]).get()
    with session_scope(bk_settings.resolved_database_url) as session:
        report = session.get_one(CiFailure, report_id)
        assert [f["signature"] for f in report.findings] == ["contract-forward-override"]
        assert report.failure_count == 3


def test_a_pr_build_maps_to_the_pr_its_base_and_its_head(bk_settings, buildkite_api):
    job = FakeJob("pytest", LOG)
    pull = {"id": "1187", "base": "release/0.21", "repository": "https://github.com/fork/trt.git"}
    build = _build(buildkite_api, job, branch="fork:feature", commit="d" * 40, pull_request=pull)
    deliver_and_process(bk_settings, "job.finished", buildkite_api.job_event(build, job))
    [(_, _, repository, pr_number, head, base)] = _reports(bk_settings)
    assert (repository, pr_number, head, base) == ("acme/trt", 1187, "d" * 40, "release/0.21")


def test_build_and_job_deliveries_of_one_job_make_one_report_whatever_the_order(
    bk_settings, buildkite_api
):
    failed, passed = FakeJob("pytest", LOG), FakeJob("lint", b"ok\n", state="passed", exit_status=0)
    soft = FakeJob("flaky", LOG, soft_failed=True)
    build = _build(buildkite_api, failed, passed, soft)
    first, notes = deliver_and_process(
        bk_settings, "build.finished", buildkite_api.build_event(build)
    )
    assert first["status"] == "accepted", first
    # The build's job webhook after it, then both again (Buildkite redelivering).
    job_answer, _ = deliver_and_process(
        bk_settings, "job.finished", buildkite_api.job_event(build, failed)
    )
    again, _ = deliver_and_process(bk_settings, "build.finished", buildkite_api.build_event(build))
    assert job_answer["status"] == again["status"] == "duplicate"
    assert len(_reports(bk_settings)) == 1, notes
    assert len(buildkite_api.calls_to("GET", r"/jobs/.*/log$")) == 1
    assert len(buildkite_api.calls_to("GET", r"/builds/412$")) == 1
    assert [outcome for _, outcome in _outcomes(bk_settings)] == ["processed", "processed"]


def test_a_job_webhook_first_then_the_build_fetches_nothing_again(bk_settings, buildkite_api):
    failed = FakeJob("pytest", LOG)
    build = _build(buildkite_api, failed)
    deliver_and_process(bk_settings, "job.finished", buildkite_api.job_event(build, failed))
    _, notes = deliver_and_process(bk_settings, "build.finished", buildkite_api.build_event(build))
    assert any("0 new" in note for note in notes), notes
    assert len(_reports(bk_settings)) == 1
    assert len(buildkite_api.calls_to("GET", r"/jobs/.*/log$")) == 1


def test_every_failed_job_of_a_build_is_its_own_report(bk_settings, buildkite_api):
    shards = [FakeJob("pytest", LOG, parallel=(i, 3)) for i in range(3)]
    timed_out = FakeJob("gpu", LOG, state="timed_out", exit_status=-1)
    canceled = FakeJob("docs", LOG, state="canceled", exit_status=-1)
    waiter = FakeJob("wait", b"", type="waiter", state="passed", exit_status=None)
    build = _build(buildkite_api, *shards, timed_out, canceled, waiter)
    deliver_and_process(bk_settings, "build.finished", buildkite_api.build_event(build))
    labels = sorted(report[1] for report in _reports(bk_settings))
    assert labels == [
        "acme/trt-gpu #412 / gpu",
        "acme/trt-gpu #412 / pytest (1/3)",
        "acme/trt-gpu #412 / pytest (2/3)",
        "acme/trt-gpu #412 / pytest (3/3)",
    ]


def test_a_retried_job_is_a_new_report(bk_settings, buildkite_api):
    first = FakeJob("pytest", LOG)
    build = _build(buildkite_api, first)
    deliver_and_process(bk_settings, "job.finished", buildkite_api.job_event(build, first))
    retry = FakeJob("pytest", LOG)
    build.jobs = [retry]
    deliver_and_process(bk_settings, "job.finished", buildkite_api.job_event(build, retry))
    keys = [report[0].rsplit("/", 1)[1] for report in _reports(bk_settings)]
    assert keys == [first.id, retry.id]


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"state": "passed", "exit_status": 0}, "did not fail (script passed, exit 0)"),
        ({"soft_failed": True}, "soft-failed"),
        ({"type": "trigger", "exit_status": None}, "did not fail (trigger failed"),
        ({"state": "canceled", "exit_status": -1}, "did not fail (script canceled"),
    ],
)
def test_jobs_that_did_not_fail_are_left_alone(bk_settings, buildkite_api, fields, why):
    job = FakeJob("pytest", LOG, **fields)
    build = _build(buildkite_api, job)
    _, notes = deliver_and_process(bk_settings, "job.finished", buildkite_api.job_event(build, job))
    assert any(why in note for note in notes), notes
    assert _reports(bk_settings) == [] and buildkite_api.calls == []


def test_a_passed_build_reads_nothing(bk_settings, buildkite_api):
    build = _build(buildkite_api, FakeJob("pytest", b"ok\n", state="passed"), state="passed")
    _, notes = deliver_and_process(bk_settings, "build.finished", buildkite_api.build_event(build))
    assert any("passed" in note for note in notes) and buildkite_api.calls == []


@pytest.mark.parametrize(("status", "why"), [(410, "410: expired or deleted"), (404, "404")])
def test_a_log_that_is_gone_is_a_report_that_says_so(bk_settings, buildkite_api, status, why):
    job = FakeJob("pytest", LOG, log_status=status)
    build = _build(buildkite_api, job)
    deliver_and_process(bk_settings, "job.finished", buildkite_api.job_event(build, job))
    with session_scope(bk_settings.resolved_database_url) as session:
        report = session.scalars(select(CiFailure)).one()
        body = session.get_one(Delivery, report.delivery_id).content().decode()
    assert (
        body.startswith("ERROR: repairbot could not read this Buildkite job's log") and why in body
    )
    triage.apply(args=[report.id]).get()
    with session_scope(bk_settings.resolved_database_url) as session:
        [finding] = session.get_one(CiFailure, report.id).findings
    assert why in finding["message"] and finding["signature"] == "unclassified"


def test_an_empty_log_is_a_report_that_says_so(bk_settings, buildkite_api):
    job = FakeJob("pytest", b"")
    build = _build(buildkite_api, job)
    deliver_and_process(bk_settings, "job.finished", buildkite_api.job_event(build, job))
    with session_scope(bk_settings.resolved_database_url) as session:
        report = session.scalars(select(CiFailure)).one()
        body = session.get_one(Delivery, report.delivery_id).content()
    assert b"is empty" in body


def test_a_build_buildkite_does_not_know_is_refused(bk_settings, buildkite_api):
    build = FakeBuild("acme", "trt-gpu", 77, REPOSITORY, jobs=[FakeJob("pytest", LOG)])
    _, notes = deliver_and_process(bk_settings, "build.finished", buildkite_api.build_event(build))
    assert _outcomes(bk_settings)[0][1] == "refused"
    assert any("404" in note for note in notes) and _reports(bk_settings) == []


def test_without_an_api_token_the_delivery_is_unconfigured(
    bk_settings, buildkite_api, task_settings
):
    settings = task_settings(bk_settings.model_copy(update={"buildkite_api_token": None}))
    job = FakeJob("pytest", LOG)
    build = _build(buildkite_api, job)
    _, notes = deliver_and_process(settings, "job.finished", buildkite_api.job_event(build, job))
    assert _outcomes(settings)[0][1] == "unconfigured"
    assert any("REPAIRBOT_BUILDKITE_API_TOKEN" in note for note in notes)


@pytest.mark.parametrize(
    ("url", "mapping", "expected"),
    [
        ("git@github.com:acme/trt.git", {}, "acme/trt"),
        ("https://github.com/acme/trt", {}, "acme/trt"),
        ("ssh://git@github.com/acme/trt.git", {}, "acme/trt"),
        ("git@gitlab.example:acme/trt.git", {}, None),
        ("git@github.com:acme/../etc.git", {}, None),
        (
            "git@gitlab.example:acme/trt.git",
            {"git@gitlab.example:acme/trt": "/srv/trt"},
            "/srv/trt",
        ),
        ("git@github.com:acme/trt.git", {"acme/trt-gpu": "acme/trt-mirror"}, "acme/trt-mirror"),
    ],
)
def test_the_pipeline_repository_maps_to_the_repository_repaired(
    bk_settings, buildkite_api, url, mapping, expected
):
    fake = FakeBuild("acme", "trt-gpu", 1, url)
    build = finished_build(buildkite_api.build_event(fake))
    assert build is not None
    settings = bk_settings.model_copy(update={"buildkite_repositories": mapping})
    assert repository_for(settings, build) == expected


def test_delivery_ids_name_what_the_delivery_is_about(buildkite_api):
    job = FakeJob("pytest", LOG)
    build = FakeBuild("acme", "trt-gpu", 1, REPOSITORY, jobs=[job])
    job_event, build_event = buildkite_api.job_event(build, job), buildkite_api.build_event(build)
    assert delivery_id("job.finished", job_event, b"x") == f"job.finished:{job.id}"
    finished = build_event["build"]["finished_at"]
    assert (
        delivery_id("build.finished", build_event, b"x") == f"build.finished:{build.id}:{finished}"
    )
    assert delivery_id("ping", {}, b"x").startswith("ping:sha256:")


def test_a_log_buildkite_keeps_failing_leaves_the_delivery_for_a_retry_and_loses_nothing(
    bk_settings, buildkite_api
):
    job = FakeJob("pytest", LOG)
    build = _build(buildkite_api, job)
    answer = post_webhook(bk_settings, "job.finished", buildkite_api.job_event(build, job)).json()
    buildkite_api.fault("GET", r"/jobs/.*/log$", 502, times=5)
    with pytest.raises(TransientError, match=r"answered 502 \(attempt 5 of 5"):
        handle_delivery(bk_settings, answer["delivery_id"])
    assert _outcomes(bk_settings)[0][1] == "stored" and _reports(bk_settings) == []
    # The task's retry (or the reconciler's resend), once Buildkite answers again.
    notes = handle_delivery(bk_settings, answer["delivery_id"])
    assert _outcomes(bk_settings)[0][1] == "processed" and len(_reports(bk_settings)) == 1, notes


def test_a_rate_limit_is_waited_out_within_the_task(bk_settings, buildkite_api):
    job = FakeJob("pytest", LOG)
    build = _build(buildkite_api, job)
    limited = {"RateLimit-Remaining": "0", "RateLimit-Reset": "0", "RateLimit-User-Reset": "0"}
    buildkite_api.fault("GET", r"/jobs/.*/log$", 429, times=2, headers=limited)
    deliver_and_process(bk_settings, "job.finished", buildkite_api.job_event(build, job))
    assert [c.status for c in buildkite_api.calls_to("GET", r"/jobs/.*/log$")] == [429, 429, 200]
    assert len(_reports(bk_settings)) == 1


def test_a_gone_log_is_on_the_failures_page_with_its_reason(bk_settings, buildkite_api):
    job = FakeJob("pytest", LOG, log_status=410)
    build = _build(buildkite_api, job)
    deliver_and_process(bk_settings, "job.finished", buildkite_api.job_event(build, job))
    with session_scope(bk_settings.resolved_database_url) as session:
        report_id = session.scalars(select(CiFailure.id)).one()
    triage.apply(args=[report_id]).get()
    with TestClient(create_app(bk_settings)) as client:
        page = client.get("/failures").raise_for_status().text
    assert f'data-report-id="{report_id}"' in page
    assert "acme/trt-gpu #412 / pytest" in page
    assert f"the log of Buildkite job {job.id} is gone (410: expired or deleted)" in page


def test_a_payload_without_its_job_is_processed_with_the_reason(bk_settings):
    _, notes = deliver_and_process(bk_settings, "job.finished", {"event": "job.finished", "job": 7})
    assert notes == ["buildkite-job: not a job.finished payload naming its job and build"]
    _, notes = deliver_and_process(bk_settings, "build.finished", {"build": {"id": 1}})
    assert notes == ["buildkite-build: not a build.finished payload naming its build"]
