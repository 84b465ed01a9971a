"""A GitHub Actions failure reaches the dashboard from a ``workflow_job`` webhook alone.

The served API with its embedded worker (real processes) gets nothing but the webhook; it fetches
the job's log from the fake GitHub (302 to a signed blob URL), classifies it and repairs.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

from bot.cli.demo_target import build_target, run_tests, wait_for_runs
from bot.intake.webhook_auth import sign
from tests.conftest import SECRET
from tests.fakes.github_actions import actions_log, workflow_job_event
from tests.fakes.github_api import TOKEN

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO = "acme/trt"


@pytest.fixture
def failing_job(github_api, tmp_path):
    """The legacy workers on the fake GitHub, and an Actions job whose log is their real test run."""
    source = tmp_path / "repo"
    head = build_target(source)
    github_api.create_repo(REPO, source)
    console = run_tests(source).console.decode("utf-8", "replace")
    log = actions_log(console.splitlines(), step="Run python -m pytest")
    return github_api.add_actions_job(REPO, log, head_sha=head, name="unit tests")


def _report_with_findings(client: httpx.Client, service, timeout_s: float = 120) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        reports = client.get("/api/v1/failures").raise_for_status().json()
        if reports and reports[0]["classified_at"] and reports[0]["runs"]:
            return reports[0]
        time.sleep(0.2)
    raise AssertionError(f"no classified report in {timeout_s}s\n{service.logs()}")


def test_a_workflow_job_webhook_alone_puts_the_failure_on_the_dashboard(
    make_service, github_api, failing_job
):
    service = make_service(
        github_api_url=github_api.url,
        github_token=TOKEN,
        github_git_url_template=github_api.git_url_template,
        github_seconds_between_writes="0",
    )
    service.start_api()
    body = json.dumps(workflow_job_event(github_api, failing_job)).encode()
    answer = httpx.post(
        f"{service.url}/webhooks/github",
        content=body,
        headers={
            "X-GitHub-Event": "workflow_job",
            "X-GitHub-Delivery": "wj-e2e-1",
            "Content-Type": "application/json",
            "X-Hub-Signature-256": sign(SECRET.encode(), body),
        },
        timeout=30,
    )
    assert answer.status_code == 202, answer.text
    with service.client() as client:
        listed = _report_with_findings(client, service)
        report = client.get(f"/api/v1/reports/{listed['id']}").raise_for_status().json()
        page = client.get("/failures").raise_for_status().text
    assert report["pipeline"] == "CI / unit tests" and report["repository"] == REPO
    assert report["format"] == "console" and report["failure_count"] >= 1
    signatures = {finding["signature"] for finding in report["findings"]}
    assert "contract-forward-override" in signatures, report
    assert f'data-report-id="{report["id"]}"' in page
    assert "CI / unit tests" in page and "contract-forward-override" in page
    assert failing_job.html_url in page  # the link back to the job on github.com
    # The log came through the redirect, and the blob host never saw our token.
    assert [c.authorization for c in github_api.calls_to("GET", r"^/_blobs/")] == [""]
    # And it is treated like any CI report: repaired, one PR (then verified, when the
    # verification has finished by the time the run is looked at).
    with service.client() as client:
        done = wait_for_runs(client, f"/api/v1/reports/{report['id']}", timeout_s=180)
    [run] = done["runs"]
    assert run["state"] in ("pr_opened", "verified"), service.logs()
    assert len(github_api.pulls(REPO)) == 1
