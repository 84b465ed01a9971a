"""``POST /webhooks/gitlab`` through the real app, database and broker (SQLite and PostgreSQL):
the token is checked before anything is read, bad bodies are refused with the reason and leave
nothing behind, and a redelivery is a duplicate."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from bot.api.gitlab_webhooks import delivery_id
from bot.db.models import Delivery
from bot.db.session import session_scope
from bot.intake.webhook_auth import token_matches
from tests.fakes.gitlab.deliveries import WEBHOOK_TOKEN, post_hook

HOOK = {"object_kind": "pipeline", "object_attributes": {"id": 1}, "builds": []}


def _stored(settings) -> list[tuple[str, str, str, str | None]]:
    with session_scope(settings.resolved_database_url) as session:
        return [
            (d.source, d.key, d.event, d.outcome)
            for d in session.scalars(select(Delivery).order_by(Delivery.id))
        ]


def test_a_delivery_is_stored_once_under_its_idempotency_key(gl_settings):
    headers = {"Idempotency-Key": "idem-1"}
    first = post_hook(gl_settings, "Pipeline Hook", HOOK, uuid="event-1", headers=headers)
    # GitLab's retry of the same delivery keeps its Idempotency-Key.
    again = post_hook(gl_settings, "Pipeline Hook", HOOK, uuid="event-2", headers=headers)
    assert first.status_code == 202 and first.json()["status"] == "accepted"
    assert again.status_code == 200 and again.json() == {
        "status": "duplicate",
        "delivery": "idem-1",
    }
    assert _stored(gl_settings) == [("gitlab", "gitlab:idem-1", "Pipeline Hook", "stored")]


def test_without_an_idempotency_key_the_event_uuid_and_then_the_body_identify_it(gl_settings):
    assert post_hook(gl_settings, "Job Hook", HOOK, uuid="u-1").json()["status"] == "accepted"
    assert post_hook(gl_settings, "Job Hook", HOOK, uuid="u-1").json()["status"] == "duplicate"
    assert post_hook(gl_settings, "Job Hook", HOOK, uuid=None).json()["status"] == "accepted"
    assert post_hook(gl_settings, "Job Hook", HOOK, uuid=None).json()["status"] == "duplicate"
    keys = [key for _, key, _, _ in _stored(gl_settings)]
    assert keys[0] == "gitlab:u-1" and keys[1].startswith("gitlab:sha256:") and len(keys) == 2


def test_an_event_no_handler_takes_is_kept_as_ignored(gl_settings):
    answer = post_hook(gl_settings, "Push Hook", {"object_kind": "push"}, uuid="p-1")
    assert answer.status_code == 202 and answer.json() == {
        "status": "ignored",
        "event": "Push Hook",
    }
    assert _stored(gl_settings) == [("gitlab", "gitlab:p-1", "Push Hook", "ignored")]


@pytest.mark.parametrize(
    "token",
    [
        None,
        "",
        "wrong-token",
        WEBHOOK_TOKEN[:-1],
        WEBHOOK_TOKEN + "x",
        "ünïcode-token".encode("latin-1"),
    ],
)
def test_a_missing_or_forged_token_is_refused_before_the_body_is_read(gl_settings, token):
    answer = post_hook(gl_settings, "Pipeline Hook", b"{not json", uuid="f-1", token=token)
    assert answer.status_code == 401
    assert answer.json() == {"detail": "missing or wrong X-Gitlab-Token"}
    assert answer.headers["connection"] == "close"
    assert _stored(gl_settings) == []


def test_with_no_token_configured_every_delivery_is_refused(gl_settings):
    settings = gl_settings.model_copy(update={"gitlab_webhook_token": None})
    answer = post_hook(settings, "Pipeline Hook", HOOK, uuid="n-1")
    assert answer.status_code == 503 and "REPAIRBOT_GITLAB_WEBHOOK_TOKEN" in answer.json()["detail"]
    assert _stored(gl_settings) == []


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        (b'{"object_kind": "pipeline",', 400, "malformed JSON at line 1, column 28"),
        (b"[1, 2]", 400, "payload must be a JSON object"),
        (b'{"object_kind": "\xff"}', 400, "body is not UTF-8 (byte 17)"),
        (b"[" * 100_000 + b"]" * 100_000, 400, "JSON nested too deeply"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_refused_with_the_reason(
    gl_settings, body, status, detail
):
    answer = post_hook(gl_settings, "Pipeline Hook", body, uuid="b-1")
    assert answer.status_code == status
    assert answer.json()["detail"].startswith(detail), answer.json()
    assert _stored(gl_settings) == []


def test_a_body_over_the_cap_is_refused(gl_settings):
    settings = gl_settings.model_copy(update={"max_webhook_bytes": 4096})
    huge = json.dumps({"object_kind": "pipeline", "pad": "x" * 5000}).encode()
    answer = post_hook(settings, "Pipeline Hook", huge, uuid="h-1")
    assert answer.status_code == 413
    assert _stored(gl_settings) == []


def test_headers_that_cannot_be_a_delivery_are_refused(gl_settings):
    no_event = post_hook(gl_settings, "", HOOK, uuid="e-1")
    long_key = post_hook(gl_settings, "Job Hook", HOOK, uuid="k" * 151)
    assert no_event.status_code == 400 and "X-Gitlab-Event" in no_event.json()["detail"]
    assert long_key.status_code == 400 and "longer than 150" in long_key.json()["detail"]
    assert _stored(gl_settings) == []


def test_the_token_comparison_and_the_delivery_id_rules():
    assert token_matches("secret-token", "secret-token")
    assert not token_matches("secret-token", None)
    assert not token_matches("secret-token", "secret-tokeN")
    assert delivery_id({"idempotency-key": "a", "x-gitlab-event-uuid": "b"}, b"{}") == "a"
    assert delivery_id({"x-gitlab-event-uuid": "b"}, b"{}") == "b"
    assert delivery_id({}, b"{}") == delivery_id({}, b"{}") != delivery_id({}, b"{ }")
