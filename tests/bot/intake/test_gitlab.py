"""Failed GitLab jobs (Pipeline Hook, Job Hook) → their traces → one report per job.

GitLab is the GitLab-API double (tests/fakes/gitlab): a real HTTP server serving the pipeline,
its merge request and each job's trace (a real-shaped runner trace around a real pytest log).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from bot.app import create_app
from bot.db.crud import undispatched_delivery_ids
from bot.db.models import CiFailure, Delivery
from bot.db.session import session_scope
from bot.intake.process_delivery import process_delivery
from bot.pipeline.task_base import TransientError
from bot.pipeline.triage import triage
from tests.fakes.gitlab.deliveries import deliver_and_process, post_hook
from tests.fakes.gitlab.hooks import job_hook, pipeline_hook
from tests.fakes.gitlab.projects import FakeJob, gitlab_trace

PROJECT = "gpu/infer/trt"
PYTEST_RUN = (
    Path(__file__).parents[2] / "fixtures" / "logs" / "py312" / "contract_override.console.txt"
).read_text()
TRACE = gitlab_trace(PYTEST_RUN.splitlines())
TRACE_PATH = r"/jobs/\d+/trace$"
SHA = "c" * 40


@pytest.fixture
def project(gitlab_api):
    return gitlab_api.new_project(PROJECT)


def _pipeline(gitlab_api, project, *jobs, mr=None):
    """A finished pipeline of ``jobs`` (a merge request's, target ``release``, with ``mr``)."""
    if mr is not None:
        data = {"title": "t", "source_branch": "main", "target_branch": "release"}
        project.add_merge_request((mr, 900 + mr), data, {"id": 1, "username": "a", "name": "a"})
    return gitlab_api.add_pipeline(
        project, sha=SHA, ref="feature", jobs=list(jobs), merge_request_iid=mr
    )


def _reports(settings):
    with session_scope(settings.resolved_database_url) as session:
        return [
            (
                r.idempotency_key,
                r.pipeline,
                r.repository,
                r.head_sha,
                r.pr_number,
                r.base_ref,
                r.format,
            )
            for r in session.scalars(select(CiFailure).order_by(CiFailure.id))
        ]


def _outcome(settings, delivery_id):
    with session_scope(settings.resolved_database_url) as session:
        return session.get_one(Delivery, delivery_id).outcome


def test_a_failed_merge_request_pipeline_becomes_one_report_per_failed_job(
    gl_settings, gitlab_api, project
):
    jobs = [
        FakeJob("unit", trace=TRACE),
        FakeJob("lint", status="success"),
        FakeJob("gpu", trace=TRACE),
    ]
    project.add_merge_request(
        (5, 900),
        {"title": "t", "source_branch": "main", "target_branch": "release"},
        {"id": 1, "username": "a", "name": "a"},
    )
    pipeline = gitlab_api.add_pipeline(
        project, sha=SHA, ref="feature", jobs=jobs, merge_request_iid=5
    )
    answer, notes = deliver_and_process(
        gl_settings, "Pipeline Hook", pipeline_hook(gitlab_api, project, pipeline), "u-1"
    )
    assert answer["status"] == "accepted", answer
    assert _outcome(gl_settings, answer["delivery_id"]) == "processed", notes
    host = gitlab_api.url.split("//")[1]
    expected = [
        (
            f"gitlab:{host}:{project.id}:job-{job.id}",
            f"pipeline {pipeline['id']} / {job.name}",
            PROJECT,
            SHA,
            5,
            "release",
            "console",
        )
        for job in (jobs[0], jobs[2])
    ]
    assert _reports(gl_settings) == expected
    calls = gitlab_api.calls_to("GET", TRACE_PATH)
    assert len(calls) == 2 and all(c.token for c in calls)


def _hook(gitlab_api, project, pipeline):
    return pipeline_hook(gitlab_api, project, pipeline)


def test_the_job_hook_of_a_job_its_pipeline_hook_brought_fetches_nothing(
    gl_settings, gitlab_api, project
):
    job = FakeJob("unit", trace=TRACE)
    pipeline = _pipeline(gitlab_api, project, job, mr=3)
    deliver_and_process(gl_settings, "Pipeline Hook", _hook(gitlab_api, project, pipeline), "u-1")
    _, again_notes = deliver_and_process(
        gl_settings, "Pipeline Hook", _hook(gitlab_api, project, pipeline), "u-2"
    )
    answer, notes = deliver_and_process(gl_settings, "Job Hook", job_hook(gitlab_api, job), "u-3")
    assert answer["status"] == "accepted" and any("already known" in n for n in notes), notes
    assert any("already known" in n for n in again_notes), again_notes
    assert [r[4:6] for r in _reports(gl_settings)] == [(3, "release")]
    assert len(gitlab_api.calls_to("GET", TRACE_PATH)) == 1
    # Nothing was asked of GitLab for the known job: neither its pipeline nor its trace.
    assert not gitlab_api.calls_to("GET", r"/pipelines/")


def test_a_job_hook_alone_finds_its_merge_request_through_the_pipeline(
    gl_settings, gitlab_api, project
):
    job = FakeJob("H100_PCIe-PyTorch-1", trace=TRACE)
    pipeline = _pipeline(gitlab_api, project, job, mr=8)
    answer, notes = deliver_and_process(gl_settings, "Job Hook", job_hook(gitlab_api, job), "j-1")
    assert _outcome(gl_settings, answer["delivery_id"]) == "processed", notes
    [report] = _reports(gl_settings)
    assert report[2:6] == (PROJECT, SHA, 8, "release")
    assert gitlab_api.calls_to("GET", rf"/pipelines/{pipeline['id']}$")
    assert gitlab_api.calls_to("GET", r"/merge_requests/8$")
    # The stage is the job's name when it is one (the GPU type the verification asks for).
    with session_scope(gl_settings.resolved_database_url) as session:
        assert session.scalars(select(CiFailure.stage)).one() == "H100_PCIe-PyTorch-1"


def test_jobs_that_did_not_fail_or_may_fail_make_no_report(gl_settings, gitlab_api, project):
    jobs = [FakeJob("ok", status="success"), FakeJob("flaky", trace=TRACE, allow_failure=True)]
    pipeline = _pipeline(gitlab_api, project, *jobs)
    _answer, notes = deliver_and_process(
        gl_settings, "Pipeline Hook", _hook(gitlab_api, project, pipeline), "u-1"
    )
    _, job_notes = deliver_and_process(
        gl_settings, "Job Hook", job_hook(gitlab_api, jobs[1]), "u-2"
    )
    assert notes == ["gitlab-pipeline: no failed job"] and job_notes == [
        "gitlab-job: not a failed GitLab job"
    ]
    assert _reports(gl_settings) == [] and not gitlab_api.calls_to("GET", TRACE_PATH)


@pytest.mark.parametrize(
    ("job", "why"),
    [
        (FakeJob("unit", trace_status=410), "is gone (410): expired or erased on GitLab"),
        (FakeJob("unit", trace_status=404), "is gone (404): expired or erased on GitLab"),
        (FakeJob("unit", trace=b""), "is empty: erased, or the job never ran"),
    ],
)
def test_a_trace_that_is_gone_is_a_report_that_says_so_on_the_failures_page(
    gl_settings, gitlab_api, project, job, why
):
    pipeline = _pipeline(gitlab_api, project, job)
    answer, notes = deliver_and_process(
        gl_settings, "Pipeline Hook", _hook(gitlab_api, project, pipeline), "g-1"
    )
    assert _outcome(gl_settings, answer["delivery_id"]) == "processed", notes
    with session_scope(gl_settings.resolved_database_url) as session:
        report = session.scalars(select(CiFailure)).one()
        report_id, body = report.id, session.get_one(Delivery, report.delivery_id).content()
    line = f"ERROR: repairbot could not read the trace of GitLab job {job.id}: the trace of job {job.id} {why}"
    assert body.decode() == line + "\n"
    triage.apply(args=[report_id]).get()
    with TestClient(create_app(gl_settings)) as client:
        page = client.get("/failures").text
    assert f'data-report-id="{report_id}"' in page and line.removeprefix("ERROR: ") in page
    # Delivered again, it is the same report: nothing is fetched twice.
    deliver_and_process(gl_settings, "Pipeline Hook", _hook(gitlab_api, project, pipeline), "g-2")
    assert len(_reports(gl_settings)) == 1 and len(gitlab_api.calls_to("GET", TRACE_PATH)) == 1


def test_a_trace_that_is_not_utf8_is_kept_byte_for_byte_and_classified(
    gl_settings, gitlab_api, project
):
    trace = gitlab_trace(PYTEST_RUN.splitlines()).replace(b"collected", b"coll\xff\xfe\xc3cted")
    job = FakeJob("unit", trace=trace + b"\x80\x81 latin-1: caf\xe9\n")
    pipeline = _pipeline(gitlab_api, project, job)
    answer, notes = deliver_and_process(
        gl_settings, "Pipeline Hook", _hook(gitlab_api, project, pipeline), "n-1"
    )
    assert _outcome(gl_settings, answer["delivery_id"]) == "processed", notes
    with session_scope(gl_settings.resolved_database_url) as session:
        report = session.scalars(select(CiFailure)).one()
        assert session.get_one(Delivery, report.delivery_id).content() == job.trace
        report_id = report.id
    triage.apply(args=[report_id]).get()
    with session_scope(gl_settings.resolved_database_url) as session:
        findings = session.get_one(CiFailure, report_id).findings
    assert "contract-forward-override" in {f["signature"] for f in findings}


@pytest.mark.parametrize("limit", [{"retry_after": 1}, {"reset_in": 1}])
def test_a_rate_limited_trace_is_fetched_once_gitlab_allows(
    gl_settings, gitlab_api, project, limit
):
    job = FakeJob("unit", trace=TRACE)
    pipeline = _pipeline(gitlab_api, project, job)
    gitlab_api.fault("GET", TRACE_PATH, times=2, **limit)
    answer, notes = deliver_and_process(
        gl_settings, "Pipeline Hook", _hook(gitlab_api, project, pipeline), "r-1"
    )
    assert _outcome(gl_settings, answer["delivery_id"]) == "processed", notes
    assert [c.status for c in gitlab_api.calls_to("GET", TRACE_PATH)] == [429, 429, 200]
    assert len(_reports(gl_settings)) == 1


def test_server_errors_past_the_last_attempt_leave_the_delivery_to_a_later_retry(
    gl_settings, gitlab_api, project
):
    job = FakeJob("unit", trace=TRACE)
    pipeline = _pipeline(gitlab_api, project, job)
    gitlab_api.fault("GET", TRACE_PATH, status=503, times=gl_settings.gitlab_retry_attempts)
    answer = post_hook(
        gl_settings, "Pipeline Hook", _hook(gitlab_api, project, pipeline), uuid="s-1"
    ).json()
    delivery_id = answer["delivery_id"]
    with pytest.raises(TransientError, match=r"503 .*attempt 5 of 5"):
        process_delivery.apply(args=[delivery_id], throw=True, retries=99).get()
    assert _outcome(gl_settings, delivery_id) == "stored" and _reports(gl_settings) == []
    # The on-call engineer sees it wait, and why, on the failures page.
    waiting = f'data-waiting-delivery="{delivery_id}"'
    with TestClient(create_app(gl_settings)) as client:
        page = client.get("/failures").text
    shown = page[page.index(waiting) : page.index("</li>", page.index(waiting))]
    assert "Job Hook" not in shown and "Pipeline Hook" in shown and "503" in shown, shown
    # Were the task itself lost, the reconciler sends the still-stored delivery again.
    with session_scope(gl_settings.resolved_database_url) as session:
        assert delivery_id in undispatched_delivery_ids(session, older_than=timedelta(0))
    # Once GitLab answers again, the same delivery is processed: nothing was lost.
    notes = process_delivery.apply(args=[delivery_id]).get()
    assert _outcome(gl_settings, delivery_id) == "processed", notes
    assert len(_reports(gl_settings)) == 1
    assert [c.status for c in gitlab_api.calls_to("GET", TRACE_PATH)] == [503] * 5 + [200]
    with TestClient(create_app(gl_settings)) as client:
        assert waiting not in client.get("/failures").text


def test_a_refused_api_answer_is_recorded_as_refused(gl_settings, gitlab_api, project):
    job = FakeJob("unit", trace=TRACE)
    pipeline = _pipeline(gitlab_api, project, job)
    gitlab_api.fault("GET", rf"/pipelines/{pipeline['id']}$", status=403)
    answer, notes = deliver_and_process(gl_settings, "Job Hook", job_hook(gitlab_api, job), "x-1")
    assert _outcome(gl_settings, answer["delivery_id"]) == "refused"
    assert notes == [
        f"gitlab-job: GET /projects/{project.id}/pipelines/{pipeline['id']} answered 403"
    ]
