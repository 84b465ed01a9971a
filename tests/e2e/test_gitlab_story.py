"""A failed GitLab pipeline, end to end: the served app gets nothing but GitLab's webhooks.

Real processes (``repairbot serve`` with its embedded workers) and the GitLab-API double (a
real HTTP server; the project a real bare git repository): a Pipeline Hook with a failed job is
POSTed → the job's trace is fetched from the double → the report is classified → the fix is
pushed and its merge request opened through python-gitlab → verified, with a note and a commit
status on it. Redelivering the hook (the same delivery, a new delivery of the same pipeline, and
the Job Hook of the same job) opens, posts and sets nothing more.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest
from sqlalchemy import create_engine, select

from bot.cli.demo_target import build_target, run_tests, wait_for_runs, wait_for_verification
from bot.config_values import sqlite_url
from bot.db.models import Delivery
from tests.e2e.test_actions_failures import _report_with_findings
from tests.fakes.gitlab.deliveries import WEBHOOK_TOKEN
from tests.fakes.gitlab.hooks import job_hook, pipeline_hook
from tests.fakes.gitlab.projects import FakeJob, gitlab_trace
from tests.fakes.gitlab.server import TOKEN

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
PROJECT = "gpu/inference/trt"


def _post(service, event: str, payload: dict, uuid: str) -> httpx.Response:
    return httpx.post(
        f"{service.url}/webhooks/gitlab",
        content=json.dumps(payload).encode(),
        headers={
            "X-Gitlab-Event": event,
            "X-Gitlab-Token": WEBHOOK_TOKEN,
            "X-Gitlab-Event-UUID": uuid,
            "Content-Type": "application/json",
        },
        timeout=30,
    )


def _handled(service, timeout_s: float = 60) -> list[str]:
    """The outcomes of every GitLab delivery, once none is waiting to be handled."""
    engine = create_engine(sqlite_url(service.data_dir))
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            with engine.connect() as connection:
                outcomes = list(
                    connection.scalars(
                        select(Delivery.outcome)
                        .where(Delivery.source == "gitlab")
                        .order_by(Delivery.id)
                    )
                )
            if "stored" not in outcomes or time.monotonic() > deadline:
                return outcomes
            time.sleep(0.3)
    finally:
        engine.dispose()


def test_a_pipeline_hook_alone_opens_one_verified_merge_request(make_service, gitlab_api, tmp_path):
    source = tmp_path / "repo"
    head = build_target(source)
    project = gitlab_api.create_project(PROJECT, source)
    console = run_tests(source).console.decode("utf-8", "replace")
    job = FakeJob("pytest: H100_PCIe-PyTorch-1", trace=gitlab_trace(console.splitlines()))
    pipeline = gitlab_api.add_pipeline(
        project, sha=head, ref="main", jobs=[job, FakeJob("lint", status="success")]
    )
    service = make_service(
        forge="gitlab",
        gitlab_url=gitlab_api.url,
        gitlab_token=TOKEN,
        gitlab_webhook_token=WEBHOOK_TOKEN,
        gitlab_git_url_template=gitlab_api.git_url_template,
        github_seconds_between_writes="0",
    )
    service.start_api()
    hook = pipeline_hook(gitlab_api, project, pipeline)
    answer = _post(service, "Pipeline Hook", hook, "9f1c-e2e-1")
    assert answer.status_code == 202 and answer.json()["status"] == "accepted", answer.text
    with service.client() as client:
        listed = _report_with_findings(client, service)
        report = client.get(f"/api/v1/reports/{listed['id']}").raise_for_status().json()
        done = wait_for_runs(client, f"/api/v1/reports/{report['id']}", timeout_s=180)
        [run] = done["runs"]
        assert run["state"] in ("pr_opened", "verifying", "verified"), service.logs()
        verification = wait_for_verification(client, run["fix_id"], timeout_s=300)
        page = client.get("/failures").raise_for_status().text
    assert report["repository"] == PROJECT and report["head_sha"] == head
    assert "contract-forward-override" in {f["signature"] for f in report["findings"]}, report
    assert f'data-report-id="{report["id"]}"' in page and f"/-/jobs/{job.id}" in page
    [merge_request] = project.merge_requests.values()
    assert merge_request["target_branch"] == "main" and merge_request["state"] == "opened"
    fix_branch = merge_request["source_branch"]
    assert project.branch_head(fix_branch) == merge_request["sha"] != head
    # Verified in a worktree of the GitLab project's mirror (the fix fetched from the double).
    assert verification["verdict"] == "fixed", (verification, service.logs())

    def posted() -> tuple[int, int]:
        notes = project.notes[merge_request["iid"]]
        return len(notes), len([s for s in project.statuses if s["sha"] == merge_request["sha"]])

    deadline = time.monotonic() + 60
    while posted() < (1, 2) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert posted() == (1, 2), (posted(), service.logs())
    [note] = project.notes[merge_request["iid"]]
    assert "fixed" in note["body"] and "<!-- repairbot:" in note["body"]
    assert note["author"]["username"] == "repairbot"
    assert [(s["name"], s["status"]) for s in project.statuses] == [
        ("repairbot/verify", "pending"),
        ("repairbot/verify", "success"),
    ]
    before = (len(project.merge_requests), posted(), len(gitlab_api.calls_to("GET", r"/trace$")))

    # The same delivery again, a new delivery of the same pipeline, the job's own Job Hook.
    assert _post(service, "Pipeline Hook", hook, "9f1c-e2e-1").json()["status"] == "duplicate"
    assert _post(service, "Pipeline Hook", hook, "9f1c-e2e-2").status_code == 202
    assert _post(service, "Job Hook", job_hook(gitlab_api, job), "9f1c-e2e-3").status_code == 202
    assert _handled(service) == ["processed"] * 3, service.logs()
    # The Job Hook of a job already reported asks GitLab nothing (not even for its pipeline).
    assert not gitlab_api.calls_to("GET", rf"/pipelines/{pipeline['id']}$")
    with service.client() as client:
        assert len(client.get("/api/v1/failures").raise_for_status().json()) == 1
    after = (len(project.merge_requests), posted(), len(gitlab_api.calls_to("GET", r"/trace$")))
    assert before == after and before[0] == before[2] == 1, service.logs()
