"""Failed GitLab jobs (Pipeline Hook, Job Hook) → their traces → one report per job.

GitLab is the GitLab-API double (tests/fakes/gitlab): a real HTTP server serving the pipeline,
its merge request and each job's trace (a real-shaped runner trace around a real pytest log).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from bot.db.models import CiFailure, Delivery
from bot.db.session import session_scope
from tests.fakes.gitlab.deliveries import deliver_and_process
from tests.fakes.gitlab.hooks import pipeline_hook
from tests.fakes.gitlab.projects import FakeJob, gitlab_trace

PROJECT = "gpu/infer/trt"
PYTEST_RUN = (
    Path(__file__).parents[2] / "fixtures" / "logs" / "py312" / "contract_override.console.txt"
).read_text()
TRACE = gitlab_trace(PYTEST_RUN.splitlines())
TRACE_PATH = r"/jobs/\d+/trace$"
SHA = "c" * 40


@pytest.fixture
def project(gitlab_api, tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    from tests.fakes.github_git import git_out

    git_out(source, "init", "-q", "-b", "main")
    git_out(
        source,
        "-c",
        "user.name=a",
        "-c",
        "user.email=a@b",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
    )
    return gitlab_api.create_project(PROJECT, source)


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
