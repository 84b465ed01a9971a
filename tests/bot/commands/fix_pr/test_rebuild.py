"""``/bot run`` on a fix PR Buildkite built: the build is rebuilt on the Buildkite double and the
PR gets the new build's link; without the setting, or without a Buildkite build, it queues a
verification as before. A signed comment webhook, the real ``process_delivery`` and the real
``repairbot.buildkite_rebuild`` task; the fake GitHub and the Buildkite double."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from bot.app import create_app
from bot.db.models import CommandInvocation, Verification
from bot.db.session import session_scope
from bot.intake.process_delivery import process_delivery
from bot.intake.webhook_auth import sign
from bot.pipeline.buildkite_rebuild import buildkite_rebuild
from tests.bot.conftest import REPO
from tests.bot.intake.broker import tasks_to_run
from tests.conftest import SECRET
from tests.fakes.buildkite.builds import FakeBuild, FakeJob, buildkite_log
from tests.fakes.buildkite.deliveries import deliver_and_process, on_buildkite
from tests.fakes.buildkite.server import TOKEN
from tests.fakes.github_api import BOT_LOGIN
from tests.fakes.github_deliveries import send_pending_writes

REBUILD = r"/builds/412/rebuild$"


@pytest.fixture
def rebuild_settings(fix_pr, gh_settings, buildkite_api, task_settings):
    """Settings on the fake GitHub and the Buildkite double, rebuilds on; tasks read them (set
    after ``fix_pr``'s own)."""
    return task_settings(on_buildkite(gh_settings, buildkite_api, buildkite_rebuild_on_run=True))


@pytest.fixture
def built_pr(fix_pr, rebuild_settings, buildkite_api):
    """The fix PR, and a failed Buildkite build of it whose job was reported."""
    repo, number, _, head = fix_pr
    job = FakeJob("pytest", buildkite_log(["E   TypeError: boom"]))
    pull = {"id": str(number), "base": "main", "repository": f"https://github.com/{REPO}.git"}
    build = FakeBuild(
        "acme", "trt-gpu", 412, f"git@github.com:{REPO}.git", commit=head, pull_request=pull
    )
    build.jobs = [job]
    buildkite_api.add_build(build)
    deliver_and_process(rebuild_settings, "job.finished", buildkite_api.job_event(build, job))
    return repo, number


def _say(settings, github_api, number, text):
    payload = github_api.comment_event(REPO, number, text, login="writer")
    body = json.dumps(payload).encode()
    headers = {
        "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": f"d-{payload['comment']['id']}",
        "X-Hub-Signature-256": sign(SECRET.encode(), body),
    }
    with TestClient(create_app(settings)) as client:
        answer = client.post("/webhooks/github", content=body, headers=headers).json()
    process_delivery.apply(args=[answer["delivery_id"]]).get()
    send_pending_writes(settings)


def _rebuilds_queued(settings) -> list[list]:
    return [args for name, args in tasks_to_run(settings) if name == "repairbot.buildkite_rebuild"]


def _run_queued_rebuilds(settings) -> list[str]:
    said = [buildkite_rebuild.apply(args=args).get() for args in _rebuilds_queued(settings)]
    send_pending_writes(settings)
    return said


def _replies(repo, number) -> list[str]:
    return [c["body"] for c in repo.comments[number] if c["user"]["login"] == BOT_LOGIN]


def _verifications(settings) -> int:
    with session_scope(settings.resolved_database_url) as session:
        return len(session.scalars(select(Verification)).all())


def test_bot_run_rebuilds_the_prs_buildkite_build_and_links_the_new_one(
    rebuild_settings, github_api, buildkite_api, built_pr
):
    repo, number = built_pr
    _say(rebuild_settings, github_api, number, "/bot run")
    [args] = _rebuilds_queued(rebuild_settings)
    assert args[1:] == ["acme", "trt-gpu", 412] and _verifications(rebuild_settings) == 0
    assert "Rebuild of Buildkite build `acme/trt-gpu#412` queued" in _replies(repo, number)[-1]
    _run_queued_rebuilds(rebuild_settings)
    [call] = buildkite_api.calls_to("PUT", REBUILD)
    assert call.status == 200 and call.headers["authorization"] == f"Bearer {TOKEN}"
    assert ("acme", "trt-gpu", 413) in buildkite_api.builds
    link = "https://buildkite.com/acme/trt-gpu/builds/413"
    assert (
        f"Buildkite is rebuilding `acme/trt-gpu#412` as #413: {link}" in _replies(repo, number)[-1]
    )
    with session_scope(rebuild_settings.resolved_database_url) as session:
        [audit] = session.scalars(select(CommandInvocation)).all()
        assert (audit.command, audit.outcome) == ("run", "accepted")


def test_a_rebuild_task_run_twice_rebuilds_once(
    rebuild_settings, github_api, buildkite_api, built_pr
):
    repo, number = built_pr
    _say(rebuild_settings, github_api, number, "/bot run")
    _run_queued_rebuilds(rebuild_settings)
    assert _run_queued_rebuilds(rebuild_settings) == ["already answered"]
    assert len(buildkite_api.calls_to("PUT", REBUILD)) == 1
    assert sum("Buildkite is rebuilding" in reply for reply in _replies(repo, number)) == 1


def test_a_rebuild_buildkite_refuses_is_answered_with_the_reason(
    rebuild_settings, github_api, buildkite_api, built_pr
):
    repo, number = built_pr
    buildkite_api.fault("PUT", REBUILD, 502)
    _say(rebuild_settings, github_api, number, "/bot run")
    _run_queued_rebuilds(rebuild_settings)
    assert len(buildkite_api.calls_to("PUT", REBUILD)) == 1  # a 502 may have rebuilt: not again
    reply = _replies(repo, number)[-1]
    assert "could not rebuild Buildkite build `acme/trt-gpu#412`" in reply and "502" in reply


def test_without_the_setting_bot_run_verifies_as_before(
    rebuild_settings, github_api, buildkite_api, built_pr, task_settings
):
    repo, number = built_pr
    settings = task_settings(
        rebuild_settings.model_copy(update={"buildkite_rebuild_on_run": False})
    )
    _say(settings, github_api, number, "/bot run")
    assert _rebuilds_queued(settings) == [] and _verifications(settings) == 1
    assert "Verification #" in _replies(repo, number)[-1]
    assert buildkite_api.calls_to("PUT", REBUILD) == []


def test_a_pr_buildkite_never_reported_on_verifies_as_before(
    fix_pr, rebuild_settings, github_api, buildkite_api
):
    _, number, _, _ = fix_pr
    _say(rebuild_settings, github_api, number, "/bot run")
    assert _rebuilds_queued(rebuild_settings) == [] and _verifications(rebuild_settings) == 1
    assert buildkite_api.calls == []
