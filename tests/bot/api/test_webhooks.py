"""``POST /webhooks/github`` through the real app, database and broker (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from bot.app import create_app
from bot.db.models import Delivery
from bot.db.session import session_scope
from bot.intake.webhook_auth import is_valid, sign
from tests.conftest import SECRET


@pytest.fixture
def client(settings):
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def _broker_messages(settings) -> int:
    folder = Path(settings.broker_transport_options["data_folder_in"])
    return len(list(folder.glob("*.msg")))


def _deliveries(settings) -> list[Delivery]:
    with session_scope(settings.resolved_database_url) as session:
        return list(session.scalars(select(Delivery).order_by(Delivery.id)))


def _post(
    client,
    body: bytes,
    *,
    event="issue_comment",
    delivery="d-1",
    secret=SECRET,
    content_type="application/json",
    signature=None,
):
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "Content-Type": content_type,
        "X-Hub-Signature-256": signature if signature is not None else sign(secret.encode(), body),
    }
    return client.post("/webhooks/github", content=body, headers=headers)


def test_signature_matches_githubs_test_vector():
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert sign(b"It's a Secret to Everybody", b"Hello, World!") == expected
    assert is_valid(b"It's a Secret to Everybody", b"Hello, World!", expected)
    assert not is_valid(b"It's a Secret to Everybody", b"Hello, World?", expected)
    assert not is_valid(b"x", b"y", None)
    assert not is_valid(b"x", b"y", "sha1=abc")


def test_accepted_then_redelivery_is_a_no_op(client, settings):
    body = json.dumps({"action": "created", "comment": {"body": "/bot run"}}).encode()
    first = _post(client, body)
    assert first.status_code == 202 and first.json()["status"] == "accepted"
    assert _broker_messages(settings) == 1
    again = _post(client, body)
    assert again.status_code == 200 and again.json()["status"] == "duplicate"
    assert _broker_messages(settings) == 1
    stored = _deliveries(settings)
    assert [(d.key, d.event, d.action) for d in stored] == [
        ("github:d-1", "issue_comment", "created")
    ]
    assert stored[0].body == body


@pytest.mark.parametrize("signature", ["", "sha256=" + "0" * 64, "sha1=deadbeef", "garbage"])
def test_bad_signatures_are_401_and_store_nothing(client, settings, signature):
    response = _post(client, b'{"action": "created"}', signature=signature)
    assert response.status_code == 401
    assert _deliveries(settings) == [] and _broker_messages(settings) == 0


def test_signature_is_checked_before_parsing(client, settings):
    response = _post(client, b"not json at all", signature="sha256=" + "1" * 64)
    assert response.status_code == 401


def test_form_encoded_payload(client, settings):
    body = urlencode({"payload": json.dumps({"action": "opened"})}).encode()
    response = _post(
        client, body, event="pull_request", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 202
    assert _deliveries(settings)[0].action == "opened"


def test_ping_is_answered_and_stored(client, settings):
    response = _post(client, json.dumps({"zen": "Design for failure."}).encode(), event="ping")
    assert response.status_code == 200 and response.json()["status"] == "pong"
    assert _deliveries(settings)[0].outcome == "processed"
    assert _broker_messages(settings) == 0


def test_unknown_events_are_stored_and_ignored(client, settings):
    response = _post(client, b'{"action": "starred"}', event="star")
    assert response.status_code == 202 and response.json()["status"] == "ignored"
    assert _deliveries(settings)[0].outcome == "ignored"
    assert _broker_messages(settings) == 0


@pytest.mark.parametrize(
    ("body", "content_type", "code", "detail"),
    [
        (b"not json", "application/json", 400, "malformed JSON at line 1, column 1"),
        (b"[1, 2]", "application/json", 400, "payload must be a JSON object"),
        (b"\xff\xfe{}", "application/json", 400, "not UTF-8"),
        (b"[" * 50_000 + b"]" * 50_000, "application/json", 400, "nested too deeply"),
        (b"{}", "text/plain", 415, "unsupported content type"),
        (b"a=b", "application/x-www-form-urlencoded", 400, "without a payload field"),
    ],
)
def test_hostile_bodies_get_clear_errors_and_store_nothing(
    client, settings, body, content_type, code, detail
):
    response = _post(client, body, content_type=content_type)
    assert response.status_code == code
    assert detail in response.json()["detail"]
    assert _deliveries(settings) == []


def test_missing_event_headers(client):
    body = b"{}"
    response = client.post(
        "/webhooks/github",
        content=body,
        headers={"X-Hub-Signature-256": sign(SECRET.encode(), body)},
    )
    assert response.status_code == 400


def test_bodies_over_the_limit_are_413(client, settings):
    body = b'{"a": "' + b"x" * (settings.max_webhook_bytes + 10) + b'"}'
    response = _post(client, body)
    assert response.status_code == 413
    assert _deliveries(settings) == []


def test_many_deliveries_with_duplicates_and_forgeries(client, settings):
    sent_valid = set()
    for index in range(300):
        delivery = f"bulk-{index % 270}"  # 30 redeliveries
        body = json.dumps({"action": "created", "n": index % 270}).encode()
        forged = index % 20 == 7  # 5% bad signatures
        response = _post(
            client, body, delivery=delivery, signature="sha256=" + "0" * 64 if forged else None
        )
        if forged:
            assert response.status_code == 401
        else:
            assert response.status_code in (200, 202)
            sent_valid.add(delivery)
    with session_scope(settings.resolved_database_url) as session:
        stored = session.scalar(select(func.count(Delivery.id)))
    assert stored == len(sent_valid)
    assert _broker_messages(settings) == len(sent_valid)


# ---- issue 36, item 3: no signature, no read ---------------------------------------------------
class CountingBody:
    """A request body in 64 KiB chunks that counts the bytes the app asked for: through the ASGI
    transport, a chunk is produced only when the app's ``receive()`` wants it."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.read = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self.data), 64 * 1024):
            chunk = self.data[start : start + 64 * 1024]
            self.read += len(chunk)
            yield chunk


def _post_streamed(settings, body: CountingBody, headers: dict[str, str]) -> httpx.Response:
    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(settings))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.post("/webhooks/github", content=body, headers=headers)

    return asyncio.run(post())


DELIVERY = json.dumps({"action": "opened", "issue": {"body": "x" * 1024 * 1024}}).encode()
EVENT_HEADERS = {"X-GitHub-Event": "issues", "X-GitHub-Delivery": "d-9"}


@pytest.mark.parametrize("signature", [None, ""])
def test_a_delivery_without_a_signature_is_401_before_its_body_is_read(settings, signature):
    body = CountingBody(DELIVERY)
    headers = EVENT_HEADERS | ({} if signature is None else {"X-Hub-Signature-256": signature})
    response = _post_streamed(settings, body, headers)
    assert response.status_code == 401 and "X-Hub-Signature-256" in response.json()["detail"]
    assert response.headers["connection"] == "close"  # the unread rest is not drained
    assert body.read == 0
    assert _deliveries(settings) == []


def test_a_signed_delivery_is_read_whole_to_check_it(settings):
    forged = CountingBody(DELIVERY)
    headers = EVENT_HEADERS | {"X-Hub-Signature-256": "sha256=" + "0" * 64}
    assert _post_streamed(settings, forged, headers).status_code == 401
    assert forged.read == len(DELIVERY)
    signed = CountingBody(DELIVERY)
    headers = EVENT_HEADERS | {"X-Hub-Signature-256": sign(SECRET.encode(), DELIVERY)}
    assert _post_streamed(settings, signed, headers).status_code == 202
    assert signed.read == len(DELIVERY)
    assert [d.key for d in _deliveries(settings)] == ["github:d-9"]


def test_a_signature_no_body_can_match_is_refused_before_the_body_is_read():
    from bot.intake.webhook_auth import could_be_valid

    assert could_be_valid("sha256=" + "ab" * 32) and could_be_valid(" sha256=" + "0" * 64 + " ")
    for header in (None, "", "sha1=abc", "sha256=", "sha256=" + "0" * 63, "sha256=" + "g" * 64):
        assert not could_be_valid(header), header
