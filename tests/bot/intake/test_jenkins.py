"""check_run / status failures that link a Jenkins build → its testReport → the CI intake; and
pull_request events that track our PRs. Jenkins here is a tiny real HTTP server on 127.0.0.1."""

from __future__ import annotations

import base64
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.db.models import CiFailure, Delivery, Fix
from bot.db.session import session_scope
from bot.intake.jenkins import BuildRefused, build_identity
from tests.bot.conftest import REPO
from tests.fakes.github_deliveries import deliver_and_process

REPORT = (
    Path(__file__).parents[2] / "fixtures" / "logs" / "py312" / "contract_override.testreport.json"
).read_bytes()
AUTH = "Basic " + base64.b64encode(b"ci-reader:jenkins-api-token").decode()


@pytest.fixture
def jenkins():
    """Serves the fixture testReport for build 5 of L0_MergeRequest_PR, behind basic auth."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            return

        def do_GET(self):
            seen.append(self.path)
            ok = self.path == "/job/L0_MergeRequest_PR/5/testReport/api/json"
            code = 401 if self.headers.get("authorization") != AUTH else (200 if ok else 404)
            body = REPORT if code == 200 else b"{}"
            self.send_response(code)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


@pytest.fixture
def ci_settings(gh_settings, jenkins, task_settings):
    from pydantic import SecretStr

    url, _ = jenkins
    built = gh_settings.model_copy(
        update={
            "jenkins_url": url,
            "jenkins_user": "ci-reader",
            "jenkins_token": SecretStr("jenkins-api-token"),
        }
    )
    return task_settings(built)  # the tasks the test runs read these too


def _deliver(settings, event, payload, delivery):
    delivery_id, notes = deliver_and_process(settings, event, payload, delivery)
    with session_scope(settings.resolved_database_url) as session:
        outcome = session.get_one(Delivery, delivery_id).outcome
        reports = [
            (r.pipeline, r.build_number, r.repository, r.head_sha, r.format, r.failure_count)
            for r in session.scalars(select(CiFailure))
        ]
    return outcome, notes, reports


def _status(url, state="failure"):
    return {
        "state": state,
        "sha": "a" * 40,
        "target_url": url,
        "context": "L0_MergeRequest_PR",
        "repository": {"full_name": REPO},
    }


def test_a_failed_status_linking_a_build_becomes_a_report(ci_settings, jenkins):
    url, seen = jenkins
    outcome, notes, reports = _deliver(
        ci_settings, "status", _status(f"{url}/job/L0_MergeRequest_PR/5/display"), "s-1"
    )
    assert outcome == "processed", notes
    assert reports == [("L0_MergeRequest_PR", 5, REPO, "a" * 40, "testreport", reports[0][5])]
    assert reports[0][5] >= 1
    again = _deliver(ci_settings, "status", _status(f"{url}/job/L0_MergeRequest_PR/5/"), "s-2")
    assert len(again[2]) == 1 and "already known" in again[1][0]
    assert seen == ["/job/L0_MergeRequest_PR/5/testReport/api/json"]


def test_a_failed_check_run_is_handled_like_a_status(ci_settings, jenkins):
    url, _ = jenkins
    payload = {
        "action": "completed",
        "repository": {"full_name": REPO},
        "check_run": {
            "status": "completed",
            "conclusion": "failure",
            "head_sha": "b" * 40,
            "name": "Jenkins",
            "details_url": f"{url}/job/L0_MergeRequest_PR/5/",
        },
    }
    outcome, notes, reports = _deliver(ci_settings, "check_run", payload, "c-1")
    assert outcome == "processed" and [r[3] for r in reports] == ["b" * 40], notes


@pytest.mark.parametrize(
    ("target", "outcome"),
    [
        ("http://evil.example/job/L0_MergeRequest_PR/5/", "refused"),
        ("{jenkins}/job/L0_MergeRequest_PR/6/", "refused"),  # no testReport: 404
        ("{jenkins}/view/all/", "refused"),
        ("file:///etc/passwd", "refused"),
    ],
)
def test_links_we_will_not_follow_are_refused_and_nothing_is_stored(
    ci_settings, jenkins, target, outcome
):
    url, seen = jenkins
    result, notes, reports = _deliver(
        ci_settings, "status", _status(target.format(jenkins=url)), "bad"
    )
    assert result == outcome and reports == [], notes
    assert all("evil" not in path for path in seen)


def test_success_statuses_and_pending_checks_are_not_failures(ci_settings, jenkins):
    url, seen = jenkins
    outcome, _, reports = _deliver(
        ci_settings, "status", _status(f"{url}/job/L0_MergeRequest_PR/5/", "success"), "ok"
    )
    assert outcome == "processed" and reports == [] and seen == []


@pytest.mark.parametrize(
    ("url", "allowed", "expected"),
    [
        (
            "https://ci.example/job/L0_MergeRequest_PR/12/",
            ["ci.example"],
            (
                "L0_MergeRequest_PR",
                12,
                "https://ci.example/job/L0_MergeRequest_PR/12/testReport/api/json",
            ),
        ),
        (
            "https://ci.example/job/LLM/job/main/job/L0_MergeRequest_PR/7/console",
            ["CI.example"],
            (
                "LLM/main/L0_MergeRequest_PR",
                7,
                "https://ci.example/job/LLM/job/main/job/L0_MergeRequest_PR/7/testReport/api/json",
            ),
        ),
    ],
)
def test_build_identity(gh_settings, url, allowed, expected):
    assert (
        build_identity(url, gh_settings.model_copy(update={"jenkins_allowed_hosts": allowed}))
        == expected
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://user:pw@ci.example/job/A/1/",
        "ftp://ci.example/job/A/1/",
        "https://ci.example.evil/job/A/1/",
    ],
)
def test_build_identity_refuses(gh_settings, url):
    with pytest.raises(BuildRefused):
        build_identity(
            url, gh_settings.model_copy(update={"jenkins_allowed_hosts": ["ci.example"]})
        )


def test_our_pr_merged_or_closed_is_tracked(ci_settings, github_api, target):
    _repo, head = target
    with session_scope(ci_settings.resolved_database_url) as session:
        session.add(
            Fix(
                forge="github",
                repository=REPO,
                number=None,
                dedupe_key="k",
                signature="s",
                base_sha=head,
                branch="main",
                head_sha=head,
                title="t",
                body="b",
                diff="",
            )
        )
    number = github_api.open_pull(REPO, head="main", title="ours", login="repairbot[bot]")
    with session_scope(ci_settings.resolved_database_url) as session:
        session.scalar(select(Fix)).number = number
    _deliver(
        ci_settings, "pull_request", github_api.pull_request_event(REPO, number, "closed"), "p"
    )
    with session_scope(ci_settings.resolved_database_url) as session:
        assert session.scalar(select(Fix)).state == "closed"
