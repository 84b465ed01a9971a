"""``POST /webhooks/buildkite`` through the real app, database and broker (SQLite, PostgreSQL):
authentication, the replay window, duplicates, and bad input answered with a clear error and
nothing stored."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from pydantic import SecretStr
from sqlalchemy import select

from bot.db.models import Delivery
from bot.db.session import session_scope
from bot.intake.buildkite_auth import sign
from tests.fakes.buildkite.builds import FakeBuild, FakeJob
from tests.fakes.buildkite.deliveries import WEBHOOK_TOKEN, post_webhook

REPOSITORY = "git@github.com:acme/trt.git"


@pytest.fixture
def hook_settings(settings):
    return settings.model_copy(update={"buildkite_webhook_token": SecretStr(WEBHOOK_TOKEN)})


@pytest.fixture
def job_payload(buildkite_api):
    job = FakeJob("pytest", b"log\n")
    build = buildkite_api.add_build(FakeBuild("acme", "trt-gpu", 9, REPOSITORY, jobs=[job]))
    return buildkite_api.job_event(build, job)


def _stored(settings) -> list[tuple[str, str, str, str]]:
    with session_scope(settings.resolved_database_url) as session:
        query = select(Delivery).order_by(Delivery.id)
        return [(d.source, d.key, d.event, d.outcome) for d in session.scalars(query)]


def _broker_messages(settings) -> int:
    return len(list(Path(settings.broker_transport_options["data_folder_in"]).glob("*.msg")))


@pytest.mark.parametrize("auth", ["signature", "token"])
def test_an_authenticated_job_delivery_is_stored_and_queued_once(hook_settings, job_payload, auth):
    first = post_webhook(hook_settings, "job.finished", job_payload, auth=auth)
    assert first.status_code == 202 and first.json()["status"] == "accepted", first.text
    again = post_webhook(hook_settings, "job.finished", job_payload, auth=auth)
    assert again.status_code == 200 and again.json()["status"] == "duplicate"
    key = f"buildkite:job.finished:{job_payload['job']['id']}"
    assert _stored(hook_settings) == [("buildkite", key, "job.finished", "stored")]
    assert _broker_messages(hook_settings) == 1


def test_a_replay_inside_the_window_is_a_duplicate(hook_settings, job_payload):
    body = json.dumps(job_payload).encode()
    when = int(time.time()) - 60
    first = post_webhook(hook_settings, "job.finished", body, timestamp=when)
    replay = post_webhook(hook_settings, "job.finished", body, timestamp=when)
    assert (first.status_code, replay.status_code) == (202, 200)
    assert replay.json()["status"] == "duplicate" and len(_stored(hook_settings)) == 1


def test_ping_is_answered_and_other_events_are_kept_as_ignored(hook_settings, buildkite_api):
    build = FakeBuild("acme", "trt-gpu", 9, REPOSITORY, state="running")
    ping = post_webhook(hook_settings, "ping", {"event": "ping", "service": {}})
    running = post_webhook(
        hook_settings, "build.running", buildkite_api.build_event(build, "build.running")
    )
    assert (ping.status_code, ping.json()["status"]) == (200, "pong")
    assert (running.status_code, running.json()["status"]) == (202, "ignored")
    assert [row[2:] for row in _stored(hook_settings)] == [
        ("ping", "processed"),
        ("build.running", "ignored"),
    ]
    assert _broker_messages(hook_settings) == 0


@pytest.mark.parametrize(
    ("post", "reason"),
    [
        ({"auth": "none"}, "missing X-Buildkite-Signature or X-Buildkite-Token"),
        ({"auth": "token", "secret": "forged-token-0123456789abcdef"}, "wrong X-Buildkite-Token"),
        ({"auth": "token", "secret": WEBHOOK_TOKEN[:-1]}, "wrong X-Buildkite-Token"),
        ({"auth": "signature", "secret": "forged-token-0123456789abcdef"}, "wrong X-Buildkite-Sig"),
        ({"timestamp": 1_000_000_000}, "over the 300s replay window"),
        ({"timestamp": int(time.time()) + 3600}, "ahead of this server's clock"),
        (
            {"auth": "none", "headers": {"X-Buildkite-Signature": "sha256=" + "0" * 64}},
            "malformed X-Buildkite-Signature",
        ),
        (
            {"auth": "none", "headers": {"X-Buildkite-Signature": "timestamp=1,signature=zz"}},
            "malformed X-Buildkite-Signature",
        ),
    ],
)
def test_unauthenticated_deliveries_are_refused_and_nothing_is_kept(
    hook_settings, job_payload, post, reason
):
    answer = post_webhook(hook_settings, "job.finished", job_payload, **post)
    assert answer.status_code == 401 and reason in answer.json()["detail"], answer.text
    assert _stored(hook_settings) == [] and _broker_messages(hook_settings) == 0


def test_a_tampered_body_fails_its_signature(hook_settings, job_payload):
    body = json.dumps(job_payload).encode()
    header = sign(WEBHOOK_TOKEN.encode(), int(time.time()), body)
    answer = post_webhook(
        hook_settings,
        "job.finished",
        body.replace(b"pytest", b"pwned!"),
        auth="none",
        headers={"X-Buildkite-Signature": header},
    )
    assert answer.status_code == 401 and answer.json()["detail"] == "wrong X-Buildkite-Signature"
    assert _stored(hook_settings) == []


def test_signature_only_refuses_the_plain_token(hook_settings, job_payload):
    strict = hook_settings.model_copy(update={"buildkite_require_signature": True})
    answer = post_webhook(strict, "job.finished", job_payload, auth="token")
    assert answer.status_code == 401 and "X-Buildkite-Signature only" in answer.json()["detail"]
    assert post_webhook(strict, "job.finished", job_payload).status_code == 202


def test_without_a_webhook_token_buildkite_is_off(settings, job_payload):
    answer = post_webhook(settings, "job.finished", job_payload)
    assert answer.status_code == 503 and "REPAIRBOT_BUILDKITE_WEBHOOK_TOKEN" in answer.text
    assert _stored(settings) == []


@pytest.mark.parametrize(
    ("body", "headers", "status", "reason"),
    [
        (b'{"event": "job.finished", ', {}, 400, "malformed JSON at line 1"),
        (b"[1, 2, 3]", {}, 400, "payload must be a JSON object"),
        (b'{"event": "\xff\xfe"}', {}, 400, "body is not UTF-8 (byte 11)"),
        (b"[" * 100_000 + b"]" * 100_000, {}, 400, "JSON nested too deeply"),
        (b"{}", {"Content-Type": "text/xml"}, 415, "unsupported content type 'text/xml'"),
        (b"{}", {"X-Buildkite-Event": ""}, 400, "X-Buildkite-Event is required"),
        (b"{}", {"X-Buildkite-Event": "e" * 65}, 400, "X-Buildkite-Event is required"),
    ],
)
def test_bad_bodies_and_headers_are_refused_with_the_reason(
    hook_settings, body, headers, status, reason
):
    answer = post_webhook(hook_settings, "job.finished", body, headers=headers)
    assert answer.status_code == status and reason in answer.text, answer.text
    assert _stored(hook_settings) == []


def test_a_body_over_the_cap_is_refused_before_it_is_stored(hook_settings, job_payload):
    small = hook_settings.model_copy(update={"max_webhook_bytes": 4096})
    job_payload["job"]["command"] = "x" * 10_000
    answer = post_webhook(small, "job.finished", job_payload)
    assert answer.status_code == 413 and _stored(small) == []


def test_malformed_ids_get_a_body_digest_key_and_are_stored_for_the_task(hook_settings):
    answer = post_webhook(hook_settings, "job.finished", {"event": "job.finished", "job": 7})
    assert answer.status_code == 202
    [(_, key, _, outcome)] = _stored(hook_settings)
    assert key.startswith("buildkite:job.finished:sha256:") and outcome == "stored"
