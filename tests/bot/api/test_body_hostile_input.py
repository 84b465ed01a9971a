"""Hostile HTTP input answered with the right 4xx and a reason, never a 500 (issue 17, rows
10-12 and 14), on SQLite and PostgreSQL, and nothing stored for any of it."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from bot.app import create_app
from bot.db.models import CiFailure, Delivery
from bot.db.session import session_scope
from bot.intake.webhook_auth import sign
from tests.conftest import CI_TOKEN, SECRET

CONSOLE = (
    Path(__file__).parents[2] / "fixtures" / "logs" / "py311" / "combined.console.txt"
).read_bytes()
AUTH = {"Authorization": f"Bearer {CI_TOKEN}"}
HUGE = str(2**63)


@pytest.fixture
def client(settings):
    # raise_server_exceptions=False: a bug must show up as the 500 a client would see.
    with TestClient(create_app(settings), raise_server_exceptions=False) as test_client:
        yield test_client


def _stored(settings) -> tuple[int, int]:
    with session_scope(settings.resolved_database_url) as session:
        return (
            session.scalar(select(func.count(Delivery.id))) or 0,
            session.scalar(select(func.count(CiFailure.id))) or 0,
        )


def _webhook(client, body: bytes, event: str = "issue_comment", **headers: str | bytes):
    sent = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": "d-1",
        "Content-Type": "application/json",
        "X-Hub-Signature-256": sign(SECRET.encode(), body),
        **headers,
    }
    return client.post("/webhooks/github", content=body, headers=sent)


def _detail(response) -> str:
    return json.dumps(response.json())


# ---- row 10: 500s instead of 4xx --------------------------------------------------------------
def test_a_form_webhook_with_200_fields_is_400(client, settings):
    body = urlencode([("payload", "{}"), *((f"f{i}", "x") for i in range(200))]).encode()
    response = _webhook(client, body, **{"Content-Type": "application/x-www-form-urlencoded"})
    assert response.status_code == 400 and "more than 100 fields" in _detail(response)
    assert _stored(settings) == (0, 0)


def test_a_non_ascii_signature_is_401(client, settings):
    response = _webhook(client, b"{}", **{"X-Hub-Signature-256": "sha256=é".encode()})
    assert response.status_code == 401 and "X-Hub-Signature-256" in _detail(response)
    assert _stored(settings) == (0, 0)


def test_a_non_ascii_ci_signature_is_401(tmp_path):
    from tests.conftest import make_settings

    settings = make_settings(tmp_path / "data", ci_hmac_secret="ci-hmac-secret-0123456789")
    from bot.db.migrate import upgrade

    upgrade(settings.resolved_database_url)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        response = client.post(
            "/api/v1/ci-failures",
            content=CONSOLE,
            headers={"X-Repairbot-Signature-256": "sha256=ü".encode()},
        )
    assert response.status_code == 401


@pytest.mark.parametrize("field", ["build_number", "pr_number"])
def test_integers_beyond_the_columns_are_422(client, settings, field):
    response = client.post(f"/api/v1/ci-failures?{field}={HUGE}", content=CONSOLE, headers=AUTH)
    assert response.status_code == 422 and field in _detail(response)
    document = {"pipeline": "p", "build_number": 1, field: 2**63}
    response = client.post("/api/v1/ci-failures", content=json.dumps(document), headers=AUTH)
    assert response.status_code == 422 and field in _detail(response)
    assert _stored(settings) == (0, 0)


@pytest.mark.parametrize(
    "path",
    [
        f"/api/v1/reports/{HUGE}",
        f"/api/v1/fixes/{HUGE}",
        f"/fixes/{HUGE}",
        f"/partials/fixes/{HUGE}",
        "/api/v1/reports/-1",
        "/api/v1/fixes/0",
    ],
)
def test_ids_beyond_the_columns_are_404(client, path):
    response = client.get(path)
    assert response.status_code == 404, response.text


@pytest.mark.parametrize("route", ["/api/v1/failures", "/api/v1/fixes"])
def test_huge_offsets_are_422(client, route):
    assert client.get(f"{route}?offset={HUGE}").status_code == 422


# ---- row 11: intake rules as documented --------------------------------------------------------
def test_reports_as_images_are_415(client, settings):
    response = client.post(
        "/api/v1/ci-failures", content=CONSOLE, headers={**AUTH, "Content-Type": "image/png"}
    )
    assert response.status_code == 415 and "image/png" in _detail(response)
    assert _stored(settings) == (0, 0)


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded", ""],
)
def test_what_ci_tools_send_is_accepted(client, content_type):
    headers = {**AUTH, "Content-Type": content_type} if content_type else AUTH
    assert client.post("/api/v1/ci-failures", content=CONSOLE, headers=headers).status_code == 202


@pytest.mark.parametrize("offset", [10, 70_000, 5_000_000])
def test_a_nul_byte_anywhere_is_422_with_its_offset(client, settings, offset):
    body = (CONSOLE * (offset // len(CONSOLE) + 2))[:offset] + b"\x00" + CONSOLE
    response = client.post("/api/v1/ci-failures", content=body, headers=AUTH)
    assert response.status_code == 422
    assert f"NUL byte at offset {offset}" in _detail(response)
    assert _stored(settings) == (0, 0)


def test_a_nul_byte_late_in_a_json_document_is_422(client, settings):
    document = json.dumps({"pipeline": "p", "build_number": 1, "analysis_text": "x" * 80_000})
    body = document.encode()[:-2] + b"\x00" + document.encode()[-2:]
    response = client.post("/api/v1/ci-failures", content=body, headers=AUTH)
    assert response.status_code == 422 and "NUL byte" in _detail(response)
    assert _stored(settings) == (0, 0)


def test_invalid_utf8_in_a_form_payload_is_400(client, settings):
    body = b"payload=" + quote(b'{"zen": "\xff\xfe"}').encode()
    response = _webhook(
        client, body, event="ping", **{"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert response.status_code == 400 and "not UTF-8" in _detail(response)
    assert _stored(settings) == (0, 0)


def test_long_delivery_ids_are_refused_not_truncated(client, settings):
    prefix = "d" * 150
    for suffix in ("-a", "-b"):
        response = _webhook(
            client, b'{"zen": "z"}', event="ping", **{"X-GitHub-Delivery": prefix + suffix}
        )
        assert response.status_code == 400 and "X-GitHub-Delivery" in _detail(response)
    assert _stored(settings) == (0, 0)
    assert _webhook(client, b"{}", event="ping", **{"X-GitHub-Delivery": prefix}).status_code == 200


def test_long_idempotency_keys_sharing_a_prefix_are_two_reports(client, settings):
    first = client.post(
        "/api/v1/ci-failures",
        content=CONSOLE,
        headers={**AUTH, "Idempotency-Key": "k" * 199 + "a"},
    )
    second = client.post(
        "/api/v1/ci-failures",
        content=CONSOLE,
        headers={**AUTH, "Idempotency-Key": "k" * 199 + "b"},
    )
    assert (first.status_code, second.status_code) == (202, 202), second.text
    assert first.json()["report_id"] != second.json()["report_id"]
    assert _stored(settings) == (2, 2)


def test_long_pipeline_and_build_keys_fit_the_delivery_column(client, settings):
    query = f"?pipeline={'p' * 200}&build_number=2147483647"
    response = client.post(f"/api/v1/ci-failures{query}", content=CONSOLE, headers=AUTH)
    assert response.status_code == 202, response.text
    again = client.post(f"/api/v1/ci-failures{query}", content=CONSOLE, headers=AUTH)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert _stored(settings) == (1, 1)


# ---- row 12: option-looking values never reach git ---------------------------------------------
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("base_ref", "--upload-pack=touch /tmp/pwned"),
        ("base_ref", "-main"),
        ("base_ref", "main..evil"),
        ("base_ref", "a b"),
        ("head_sha", "--output=x"),
        ("base_sha", "-abcdef1"),
    ],
)
def test_option_looking_refs_are_422(client, settings, field, value):
    response = client.post(
        f"/api/v1/ci-failures?{field}={quote(value)}", content=CONSOLE, headers=AUTH
    )
    assert response.status_code == 422 and field in _detail(response)
    document = {"pipeline": "p", "build_number": 1, field: value}
    response = client.post("/api/v1/ci-failures", content=json.dumps(document), headers=AUTH)
    assert response.status_code == 422 and field in _detail(response)
    assert _stored(settings) == (0, 0)


@pytest.mark.parametrize("gpu_type", ["../../etc/x", "H100 PCIe", "-Q", "x" * 65, "a/b"])
def test_gpu_types_that_are_not_queue_names_are_422(client, settings, gpu_type):
    document = {
        "pipeline": "p",
        "build_number": 1,
        "stages": [{"name": "s", "gpu_type": gpu_type, "result": "FAILURE"}],
    }
    response = client.post("/api/v1/ci-failures", content=json.dumps(document), headers=AUTH)
    assert response.status_code == 422 and "gpu_type" in _detail(response)
    assert _stored(settings) == (0, 0)


def test_plain_refs_and_gpu_types_are_accepted(client):
    document = {
        "pipeline": "p",
        "build_number": 1,
        "base_ref": "release/v1.2",
        "stages": [{"name": "s", "gpu_type": "H100_PCIe", "result": "FAILURE"}],
    }
    response = client.post("/api/v1/ci-failures", content=json.dumps(document), headers=AUTH)
    assert response.status_code == 202, response.text


# ---- row 14: build links are http(s) ------------------------------------------------------------
@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        "data:text/html,x",
        "//evil.example/x",
        "ftp://h/x",
    ],
)
def test_non_http_build_urls_are_422(client, settings, url):
    response = client.post(
        f"/api/v1/ci-failures?build_url={quote(url)}", content=CONSOLE, headers=AUTH
    )
    assert response.status_code == 422 and "build_url" in _detail(response)
    document = {"pipeline": "p", "build_number": 1, "build_url": url}
    response = client.post("/api/v1/ci-failures", content=json.dumps(document), headers=AUTH)
    assert response.status_code == 422 and "build_url" in _detail(response)
    assert _stored(settings) == (0, 0)


def test_a_stored_javascript_build_url_is_never_a_link_on_the_dashboard(client, settings):
    from bot.db.crud import insert_delivery

    with session_scope(settings.resolved_database_url) as session:  # as an older version stored it
        delivery_id = insert_delivery(
            session, source="ci", key="ci:old", event="ci_failure", action=None, body=b""
        )
        assert delivery_id is not None
        session.add(
            CiFailure(
                delivery_id=delivery_id,
                pipeline="old",
                build_number=1,
                build_url="javascript:alert(document.cookie)",
                format="console",
                findings=[],
            )
        )
    page = client.get("/failures")
    assert page.status_code == 200 and "old #1" in page.text
    assert "javascript:" not in page.text


def test_gpu_types_stored_before_the_check_never_become_queue_names():
    from bot.runner.requests import queue_for

    assert queue_for(["../../broker/x", "H100_PCIe"], "cpu") == "gpu.H100_PCIe"
    assert queue_for(["a b", "-Q"], "cpu") == "cpu"
