"""Failed GitHub Actions jobs (``workflow_job`` and Actions' ``check_run``) → their logs → reports.

GitHub is the suite's one double (tests/fakes): it serves the job, answers the logs endpoint with
a 302 to a signed blob URL, and the blob with a real-shaped Actions log of a real pytest run.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.db.models import CiFailure, Delivery
from bot.db.session import read_scope, session_scope
from bot.forges.github.job_logs import redirect_problem
from bot.forges.github.retry import RateLimited
from bot.intake.actions import ActionsJob, intake_actions_job
from bot.pipeline.triage import triage
from tests.fakes.github_actions import actions_log, check_run_event, workflow_job_event
from tests.fakes.github_deliveries import deliver_and_process

REPO = "acme/trt"
PYTEST_RUN = (
    Path(__file__).parents[2] / "fixtures" / "logs" / "py312" / "contract_override.console.txt"
).read_text()
LOG = actions_log(PYTEST_RUN.splitlines())
LOGS_PATH = r"/actions/jobs/\d+/logs$"


@pytest.fixture
def actions_settings(gh_settings, task_settings):
    """GitHub on the double; tasks read these settings too."""
    return task_settings(gh_settings)


def _deliver(settings, event, payload, delivery):
    delivery_id, notes = deliver_and_process(settings, event, payload, delivery)
    with session_scope(settings.resolved_database_url) as session:
        outcome = session.get_one(Delivery, delivery_id).outcome
        reports = [
            (r.id, r.idempotency_key, r.pipeline, r.repository, r.head_sha, r.format)
            for r in session.scalars(select(CiFailure).order_by(CiFailure.id))
        ]
    return outcome, notes, reports


def test_a_failed_workflow_job_becomes_one_console_report(actions_settings, github_api):
    job = github_api.add_actions_job(REPO, LOG)
    outcome, notes, reports = _deliver(
        actions_settings, "workflow_job", workflow_job_event(github_api, job), "wj-1"
    )
    assert outcome == "processed", notes
    key = f"github-actions:{REPO}:job-{job.id}:attempt-1"
    assert [r[1:] for r in reports] == [(key, "CI / test (3.12)", REPO, "c" * 40, "console")]
    # The API redirects; the signed blob URL is fetched without our token.
    (api_call,) = github_api.calls_to("GET", LOGS_PATH)
    (blob_call,) = github_api.calls_to("GET", r"^/_blobs/job-logs/")
    assert api_call.status == 302 and api_call.authorization.startswith("Bearer ")
    assert blob_call.status == 200 and blob_call.authorization == ""
    with session_scope(actions_settings.resolved_database_url) as session:
        stored = session.scalars(select(Delivery).where(Delivery.source == "ci")).one()
        assert stored.body == LOG and stored.key == key


def test_redeliveries_and_the_matching_check_run_make_no_second_report(
    actions_settings, github_api
):
    job = github_api.add_actions_job(REPO, LOG)
    _deliver(actions_settings, "workflow_job", workflow_job_event(github_api, job), "wj-1")
    again = _deliver(actions_settings, "workflow_job", workflow_job_event(github_api, job), "wj-2")
    check = _deliver(actions_settings, "check_run", check_run_event(github_api, job), "cr-1")
    assert len(check[2]) == 1 and again[2] == check[2]
    assert any("already known" in note for note in again[1])
    assert any("actions-check-run" in n and "already known" in n for n in check[1]), check[1]
    # The Jenkins handler leaves Actions' check runs alone instead of refusing their link.
    assert check[0] == "processed"
    assert any(n.startswith("ci-check-run: a GitHub Actions check run") for n in check[1])
    assert len(github_api.calls_to("GET", LOGS_PATH)) == 1


def test_a_check_run_alone_is_enough_and_a_rerun_is_a_new_report(actions_settings, github_api):
    first = github_api.add_actions_job(REPO, LOG)
    outcome, notes, reports = _deliver(
        actions_settings, "check_run", check_run_event(github_api, first), "cr-1"
    )
    assert outcome == "processed" and len(reports) == 1, notes
    rerun = github_api.add_actions_job(REPO, LOG, run_id=first.run_id, run_attempt=2)
    _, _, reports = _deliver(
        actions_settings, "workflow_job", workflow_job_event(github_api, rerun), "wj-2"
    )
    assert [r[1].rsplit(":", 1)[1] for r in reports] == ["attempt-1", "attempt-2"]


def test_the_report_is_classified_like_a_posted_console_log(actions_settings, github_api):
    job = github_api.add_actions_job(REPO, LOG)
    _, _, reports = _deliver(
        actions_settings, "workflow_job", workflow_job_event(github_api, job), "wj-1"
    )
    triage.apply(args=[reports[0][0]]).get()
    with session_scope(actions_settings.resolved_database_url) as session:
        report = session.get_one(CiFailure, reports[0][0])
        signatures = [f["signature"] for f in report.findings]
        assert signatures == ["contract-forward-override"] and report.failure_count == 3
        assert report.findings[0]["log_line"].startswith("2026-07-30T10:55:")


@pytest.mark.parametrize(
    ("fields", "settings_update", "reason"),
    [
        ({"blob_host": "localhost"}, {}, "a redirect to host 'localhost', which is not an allowed"),
        ({"log_status": 410}, {}, "is gone (410)"),
        ({}, {"github_actions_max_log_bytes": 1000}, "over the 1000-byte cap"),
        ({"log": b"2026-07-30T10:55:18Z \x00\x01binary"}, {}, "NUL byte at offset 21"),
    ],
)
def test_logs_we_will_not_take_are_refused_and_nothing_is_stored(
    actions_settings, github_api, task_settings, fields, settings_update, reason
):
    settings = task_settings(actions_settings.model_copy(update=settings_update))
    fields = dict(fields)  # parametrized values are shared by the SQLite and PostgreSQL runs
    job = github_api.add_actions_job(REPO, fields.pop("log", LOG), **fields)
    outcome, notes, reports = _deliver(
        settings, "workflow_job", workflow_job_event(github_api, job), "bad"
    )
    assert outcome == "refused" and reports == [], notes
    assert any(reason in note for note in notes), notes
    if "blob_host" in fields:
        assert github_api.calls_to("GET", r"^/_blobs/") == []


def test_a_job_github_does_not_know_is_refused(actions_settings, github_api):
    job = github_api.add_actions_job(REPO, LOG)
    payload = check_run_event(github_api, job)
    payload["check_run"]["id"] = job.id + 1
    outcome, notes, reports = _deliver(actions_settings, "check_run", payload, "cr-404")
    assert outcome == "refused" and reports == []
    assert any(f"job {job.id + 1} of {REPO} not found (404)" in note for note in notes), notes


def test_invalid_utf8_in_the_log_is_kept_and_classified(actions_settings, github_api):
    log = LOG.replace(b"Current runner version", b"Current runner \xff\xfe version")
    job = github_api.add_actions_job(REPO, log)
    _, _, reports = _deliver(
        actions_settings, "workflow_job", workflow_job_event(github_api, job), "wj-utf8"
    )
    triage.apply(args=[reports[0][0]]).get()
    with session_scope(actions_settings.resolved_database_url) as session:
        report = session.get_one(CiFailure, reports[0][0])
        assert [f["signature"] for f in report.findings] == ["contract-forward-override"]
        assert session.get_one(Delivery, report.delivery_id).content() == log


@pytest.mark.parametrize(
    "payload_change",
    [
        {"conclusion": "success"},
        {"conclusion": "cancelled"},
        {"id": "12"},  # not an integer: not what GitHub sends
    ],
)
def test_jobs_that_did_not_fail_are_not_fetched(actions_settings, github_api, payload_change):
    job = github_api.add_actions_job(REPO, LOG)
    payload = workflow_job_event(github_api, job)
    payload["workflow_job"].update(payload_change)
    outcome, notes, reports = _deliver(actions_settings, "workflow_job", payload, "ok")
    assert outcome == "processed" and reports == [], notes
    assert github_api.calls_to("GET", LOGS_PATH) == []


def test_a_short_secondary_rate_limit_is_waited_out(actions_settings, github_api):
    job = github_api.add_actions_job(REPO, LOG)
    github_api.fault("GET", LOGS_PATH, retry_after=1)
    outcome, notes, reports = _deliver(
        actions_settings, "workflow_job", workflow_job_event(github_api, job), "wj-rl"
    )
    assert outcome == "processed" and len(reports) == 1, notes
    assert github_api.early_retries == []
    assert [c.status for c in github_api.calls_to("GET", LOGS_PATH)] == [403, 302]


def test_a_long_rate_limit_is_left_to_a_later_retry_and_stores_nothing(
    actions_settings, github_api
):
    job = github_api.add_actions_job(REPO, LOG)
    github_api.fault("GET", LOGS_PATH, rate_limit_reset_in=3600)
    parsed = ActionsJob(REPO, job.id, 1, job.name, "CI", None, None, "failure")
    reading = partial(read_scope, actions_settings.resolved_database_url)
    with pytest.raises(RateLimited, match="primary rate limit"):
        intake_actions_job(actions_settings, reading, parsed)
    with session_scope(actions_settings.resolved_database_url) as session:
        assert session.scalars(select(CiFailure)).all() == []
    # No hammering: one request, and the delivery task is retried by Celery later.
    assert len(github_api.calls_to("GET", LOGS_PATH)) == 1


def test_logs_can_be_switched_off(actions_settings, github_api, task_settings):
    settings = task_settings(actions_settings.model_copy(update={"github_actions_logs": False}))
    job = github_api.add_actions_job(REPO, LOG)
    for event, payload in (
        ("workflow_job", workflow_job_event(github_api, job)),
        ("check_run", check_run_event(github_api, job)),
    ):
        outcome, notes, reports = _deliver(settings, event, payload, event)
        assert outcome == "processed" and reports == [], notes
    assert github_api.calls == []


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://pipelines.actions.githubusercontent.com/abc/_apis/logs?sig=x", None),
        ("https://productionresultssa7.blob.core.windows.net/actions-results/x?sv=1", None),
        ("http://productionresultssa7.blob.core.windows.net/x", "a redirect to a non-https URL"),
        ("https://evil.example/x", "a redirect to host 'evil.example'"),
        ("https://blob.core.windows.net.evil.example/x", "a redirect to host"),
        (
            "https://user:pw@pipelines.actions.githubusercontent.com/x",
            "a redirect with credentials",
        ),
        ("{api}/_blobs/job-logs/1", None),  # GitHub Enterprise serves logs from its own origin
    ],
)
def test_redirect_problem(gh_settings, url, problem):
    found = redirect_problem(url.format(api=gh_settings.github_api_url), gh_settings)
    assert (found if problem is None else found and found[: len(problem)]) == problem


def test_the_api_accepts_every_event_a_handler_is_registered_for():
    from bot.intake.deliveries import HANDLED_EVENTS
    from bot.intake.route import HANDLERS

    assert {handler.event for handler in HANDLERS} == HANDLED_EVENTS
