"""A Buildkite failure reaches the dashboard, and a fix PR, from a signed webhook alone.

The served API with its embedded worker (real processes) gets nothing but Buildkite's
``build.finished`` webhook, signed with the webhook token; it reads the build's jobs from the
Buildkite double, fetches the failed job's log (the real pytest run of the legacy workers,
written as the Buildkite agent writes it), classifies it and repairs on the fake GitHub, where
the pipeline's repository lives.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

from bot.cli.demo_target import build_target, run_tests, wait_for_runs
from bot.intake.buildkite_auth import sign
from tests.e2e.conftest import wait_for
from tests.fakes.buildkite.builds import FakeBuild, FakeJob, buildkite_log
from tests.fakes.buildkite.deliveries import WEBHOOK_TOKEN
from tests.fakes.buildkite.server import TOKEN as BUILDKITE_TOKEN
from tests.fakes.github_api import TOKEN

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO = "acme/trt"


@pytest.fixture
def failing_build(github_api, buildkite_api, tmp_path):
    """The legacy workers on the fake GitHub, and a Buildkite build of them whose GPU job's log
    is their real test run."""
    source = tmp_path / "repo"
    head = build_target(source)
    github_api.create_repo(REPO, source)
    console = run_tests(source).console.decode("utf-8", "replace")
    log = buildkite_log(console.splitlines())
    jobs = [FakeJob("H100_PCIe-PyTorch-1", log), FakeJob("lint", b"ok\n", "passed", 0)]
    build = FakeBuild("acme", "trt-gpu", 4121, f"git@github.com:{REPO}.git", commit=head, jobs=jobs)
    return buildkite_api.add_build(build)


def _classified_report(client: httpx.Client) -> dict | None:
    reports = client.get("/api/v1/failures").raise_for_status().json()
    return reports[0] if reports and reports[0]["classified_at"] and reports[0]["runs"] else None


def test_a_build_finished_webhook_alone_puts_the_failure_on_the_dashboard_and_repairs_it(
    make_service, github_api, buildkite_api, failing_build
):
    service = make_service(
        github_api_url=github_api.url,
        github_token=TOKEN,
        github_git_url_template=github_api.git_url_template,
        github_seconds_between_writes="0",
        buildkite_webhook_token=WEBHOOK_TOKEN,
        buildkite_api_url=buildkite_api.url,
        buildkite_api_token=BUILDKITE_TOKEN,
    )
    service.start_api()
    body = json.dumps(buildkite_api.build_event(failing_build)).encode()
    headers = {
        "X-Buildkite-Event": "build.finished",
        "Content-Type": "application/json",
        "X-Buildkite-Signature": sign(WEBHOOK_TOKEN.encode(), int(time.time()), body),
    }
    answer = httpx.post(f"{service.url}/webhooks/buildkite", content=body, headers=headers)
    assert answer.status_code == 202, answer.text
    with service.client() as client:
        listed = wait_for(
            "a classified report", lambda: _classified_report(client), service.logs, 120
        )
        report = client.get(f"/api/v1/reports/{listed['id']}").raise_for_status().json()
        page = client.get("/failures").raise_for_status().text
    assert report["pipeline"] == "acme/trt-gpu #4121 / H100_PCIe-PyTorch-1"
    assert report["repository"] == REPO and report["head_sha"] == failing_build.commit
    assert report["format"] == "console" and report["failure_count"] >= 1
    signatures = {finding["signature"] for finding in report["findings"]}
    assert "contract-forward-override" in signatures, report
    assert f'data-report-id="{report["id"]}"' in page and "contract-forward-override" in page
    # One report: the passed lint job's log was never asked for.
    assert len(buildkite_api.calls_to("GET", r"/jobs/.*/log$")) == 1
    with service.client() as client:
        done = wait_for_runs(client, f"/api/v1/reports/{report['id']}", timeout_s=180)
    [run] = done["runs"]
    assert run["state"] in ("pr_opened", "verified"), service.logs()
    assert len(github_api.pulls(REPO)) == 1
