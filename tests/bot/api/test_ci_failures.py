"""``POST /api/v1/ci-failures``: authentication, formats, idempotency, bad input."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from bot.app import create_app
from bot.db.models import CiFailure, Delivery
from bot.db.session import session_scope
from bot.intake.webhook_auth import sign
from tests.conftest import CI_TOKEN

LOGS = Path(__file__).parents[2] / "fixtures" / "logs"
CONSOLE = (LOGS / "py311" / "combined.console.txt").read_bytes()
AUTH = {"Authorization": f"Bearer {CI_TOKEN}"}


@pytest.fixture
def client(settings):
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def _counts(settings) -> tuple[int, int]:
    with session_scope(settings.resolved_database_url) as session:
        return session.scalar(select(func.count(CiFailure.id))), session.scalar(
            select(func.count(Delivery.id))
        )


def _analysis(build: int = 7) -> bytes:
    return json.dumps(
        {
            "pipeline": "L0_MergeRequest_PR",
            "build_number": build,
            "repository": "/srv/repos/trtllm",
            "head_sha": "abcdef1234567",
            "stages": [{"name": "H100_PCIe-PyTorch-1", "result": "FAILURE"}],
            "failures": [
                {
                    "test": "tests/test_a.py",
                    "stage": "H100_PCIe-PyTorch-1",
                    "error_details": "TypeError: W must not override SpecWorkerBase.forward; implement _forward_impl instead.",
                }
            ],
        }
    ).encode()


def test_console_log_with_metadata_in_the_query(client, settings):
    response = client.post(
        "/api/v1/ci-failures?pipeline=L0_MergeRequest_PR&build_number=11"
        "&repository=/srv/repos/x&head_sha=abcdef1&stage=H100_PCIe-PyTorch-1",
        content=CONSOLE,
        headers=AUTH,
    )
    assert response.status_code == 202, response.text
    body = response.json()
    assert body["url"] == f"/api/v1/reports/{body['report_id']}" and body["duplicate"] is False
    report = client.get(body["url"]).json()
    assert (report["pipeline"], report["build_number"], report["format"]) == (
        "L0_MergeRequest_PR",
        11,
        "console",
    )
    assert report["failure_count"] is None and report["classified_at"] is None  # until triage


def test_a_console_logs_failures_are_counted_at_triage(client, settings, task_settings):
    from bot.pipeline.triage import triage_report

    task_settings(settings)
    posted = client.post(
        "/api/v1/ci-failures?pipeline=L0&build_number=12", content=CONSOLE, headers=AUTH
    )
    assert posted.status_code == 202, posted.text
    triage_report(settings, posted.json()["report_id"])
    report = client.get(posted.json()["url"]).json()
    assert report["classified_at"] is not None and report["failure_count"] == 9


def test_a_large_log_is_stored_compressed_and_triage_reads_it_whole(
    client, settings, task_settings
):
    from bot.pipeline.triage import triage_report

    task_settings(settings)
    padding = b"".join(b"[build] compiling kernel %d\n" % i for i in range(40_000))
    log = padding + CONSOLE  # about 1 MB, the failures at the end
    posted = client.post(
        "/api/v1/ci-failures?pipeline=L0&build_number=13", content=log, headers=AUTH
    )
    assert posted.status_code == 202, posted.text
    with session_scope(settings.resolved_database_url) as session:
        delivery = session.scalars(select(Delivery)).one()
        assert delivery.body_codec == "zstd" and len(delivery.body) < len(log) // 2
        assert delivery.content() == log
    triage_report(settings, posted.json()["report_id"])
    assert client.get(posted.json()["url"]).json()["failure_count"] == 9


def test_analysis_document_is_idempotent_on_pipeline_and_build(client, settings):
    first = client.post("/api/v1/ci-failures", content=_analysis(), headers=AUTH)
    again = client.post("/api/v1/ci-failures", content=_analysis(), headers=AUTH)
    assert first.status_code == 202 and again.status_code == 200
    assert again.json() == {**first.json(), "duplicate": True}
    assert _counts(settings) == (1, 1)


def test_idempotency_key_header(client, settings):
    headers = {**AUTH, "Idempotency-Key": "retry-42"}
    first = client.post("/api/v1/ci-failures", content=CONSOLE, headers=headers)
    again = client.post("/api/v1/ci-failures", content=CONSOLE, headers=headers)
    assert first.status_code == 202 and again.status_code == 200
    assert _counts(settings) == (1, 1)


def test_per_pipeline_tokens(tmp_path):
    from bot.db.migrate import upgrade
    from tests.conftest import make_settings

    settings = make_settings(
        tmp_path / "d", ci_pipeline_tokens={"nightly": "nightly-token-0123456789"}
    )
    upgrade(settings.resolved_database_url)
    with TestClient(create_app(settings)) as client:
        ok = client.post(
            "/api/v1/ci-failures?pipeline=nightly&build_number=1",
            content=CONSOLE,
            headers={"Authorization": "Bearer nightly-token-0123456789"},
        )
        assert ok.status_code == 202
        shared_token = client.post(
            "/api/v1/ci-failures?pipeline=nightly&build_number=2", content=CONSOLE, headers=AUTH
        )
        assert shared_token.status_code == 401
        other_pipeline = client.post(
            "/api/v1/ci-failures?pipeline=other&build_number=1",
            content=CONSOLE,
            headers={"Authorization": "Bearer nightly-token-0123456789"},
        )
        assert other_pipeline.status_code == 401


def test_hmac_authentication(tmp_path):
    from bot.db.migrate import upgrade
    from tests.conftest import make_settings

    settings = make_settings(tmp_path / "d", ci_hmac_secret="ci-hmac-secret-0123456789")
    upgrade(settings.resolved_database_url)
    with TestClient(create_app(settings)) as client:
        body = _analysis(9)
        good = client.post(
            "/api/v1/ci-failures",
            content=body,
            headers={"X-Repairbot-Signature-256": sign(b"ci-hmac-secret-0123456789", body)},
        )
        assert good.status_code == 202
        bad = client.post(
            "/api/v1/ci-failures",
            content=_analysis(10),
            headers={"X-Repairbot-Signature-256": sign(b"ci-hmac-secret-0123456789", body)},
        )
        assert bad.status_code == 401


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": CI_TOKEN}]
)
def test_unauthenticated_posts_store_nothing(client, settings, headers):
    assert client.post("/api/v1/ci-failures", content=CONSOLE, headers=headers).status_code == 401
    assert _counts(settings) == (0, 0)


@pytest.mark.parametrize(
    ("body", "query", "detail"),
    [
        (b'{"pipeline": ', "", "malformed JSON at line 1"),
        (b"\x00\x01binary", "", "looks binary"),
        (b"<testsuites><testcase>", "", "malformed JUnit XML"),
        (b'{"pipeline": "p", "build_number": -1}', "", "build_number"),
        (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "", "nested too deeply"),
    ],
)
def test_bad_reports_are_422_with_the_reason(client, settings, body, query, detail):
    response = client.post(f"/api/v1/ci-failures{query}", content=body, headers=AUTH)
    assert response.status_code == 422
    assert detail in json.dumps(response.json())
    assert _counts(settings) == (0, 0)


def test_bad_query_parameters_are_422(client):
    response = client.post("/api/v1/ci-failures?head_sha=not-hex!", content=CONSOLE, headers=AUTH)
    assert response.status_code == 422


def test_invalid_utf8_console_is_accepted_with_replacement(client):
    response = client.post(
        "/api/v1/ci-failures",
        content=CONSOLE.replace(b"TypeError", b"Type\xffError", 1),
        headers=AUTH,
    )
    assert response.status_code == 202


def test_reports_over_the_limit_are_413(tmp_path):
    from bot.db.migrate import upgrade
    from tests.conftest import make_settings

    settings = make_settings(tmp_path / "d", max_report_bytes=1000)
    upgrade(settings.resolved_database_url)
    with TestClient(create_app(settings)) as client:
        assert client.post("/api/v1/ci-failures", content=CONSOLE, headers=AUTH).status_code == 413


def test_a_broker_outage_still_answers_and_the_reconciler_sends_later(tmp_path):
    from datetime import timedelta

    from bot.db.migrate import upgrade
    from bot.db.models import utcnow
    from bot.pipeline.reconcile.task import reconcile_once
    from tests.conftest import make_settings

    down = make_settings(tmp_path / "d", broker_url="redis://127.0.0.1:1/0")
    upgrade(down.resolved_database_url)
    with TestClient(create_app(down)) as client:
        response = client.post("/api/v1/ci-failures", content=CONSOLE, headers=AUTH)
    assert response.status_code == 202
    assert _counts(down) == (1, 1)
    with session_scope(down.resolved_database_url) as session:
        report = session.get_one(CiFailure, response.json()["report_id"])
        report.triage_sent_at = utcnow() - timedelta(seconds=60)
    with session_scope(down.resolved_database_url) as session:  # its body, as old as the report
        session.get_one(Delivery, report.delivery_id).dispatched_at = utcnow() - timedelta(
            seconds=60
        )
    up = make_settings(tmp_path / "d")  # the same database, a reachable (filesystem) broker
    create_app(up)
    assert reconcile_once(up) == 1  # the triage only: the body's delivery is not re-dispatched
    assert len(list(Path(up.broker_transport_options["data_folder_in"]).glob("*.msg"))) == 1


def test_the_query_error_names_the_parameter_as_fastapi_would(client):
    response = client.post("/api/v1/ci-failures?build_number=-3", content=CONSOLE, headers=AUTH)
    assert response.status_code == 422
    body = response.json()  # the one error shape: a sentence, and the errors it sums up
    (error,) = body["errors"]
    assert error["loc"] == ["query", "build_number"]
    assert body["detail"].startswith("invalid request: query.build_number: ")


def test_an_idempotency_key_over_200_characters_is_422(client, settings):
    headers = {**AUTH, "Idempotency-Key": "k" * 201}
    response = client.post("/api/v1/ci-failures", content=CONSOLE, headers=headers)
    assert response.status_code == 422
    assert "Idempotency-Key" in response.json()["detail"]
    assert _counts(settings) == (0, 0)


def test_the_openapi_document_lists_the_parameters_the_route_reads(client):
    operation = client.get("/openapi.json").json()["paths"]["/api/v1/ci-failures"]["post"]
    names = {(p["in"], p["name"]) for p in operation["parameters"]}
    assert {("query", "format"), ("query", "build_number"), ("header", "Idempotency-Key")} <= names
    assert "$ref" not in json.dumps(operation["parameters"])


# ---- issue 36, item 3: credentials are checked before the body is read -------------------------
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


def _post_streamed(app, body: CountingBody, headers: dict[str, str], query: str = ""):
    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.post(f"/api/v1/ci-failures{query}", content=body, headers=headers)

    return asyncio.run(post())


BIG_LOG = CONSOLE * (1024 * 1024 // len(CONSOLE) + 1)  # about 1 MiB: 16 chunks or more


@pytest.mark.parametrize(
    ("headers", "query"),
    [
        ({}, ""),
        ({"Authorization": "Bearer wrong"}, ""),
        ({"Authorization": CI_TOKEN}, ""),  # no "Bearer "
        # The shared token for a pipeline that has its own.
        (AUTH, "?pipeline=nightly"),
        # A signature, but no HMAC key configured: nothing could check it.
        ({"X-Repairbot-Signature-256": "sha256=" + "0" * 64}, ""),
    ],
    ids=["none", "wrong", "not-bearer", "other-pipelines-token", "hmac-unconfigured"],
)
def test_unauthenticated_posts_are_401_before_a_byte_of_the_body_is_read(tmp_path, headers, query):
    from tests.conftest import make_settings

    settings = make_settings(
        tmp_path / "d", ci_pipeline_tokens={"nightly": "nightly-token-0123456789"}
    )
    body = CountingBody(BIG_LOG)
    response = _post_streamed(create_app(settings), body, headers, query)
    assert response.status_code == 401
    assert response.headers["connection"] == "close"  # the unread rest is not drained
    assert response.headers["www-authenticate"] == "Bearer"
    assert body.read == 0


def test_an_authenticated_post_is_read_whole(settings):
    body = CountingBody(BIG_LOG)
    response = _post_streamed(create_app(settings), body, AUTH, "?pipeline=p&build_number=1")
    assert response.status_code == 202, response.text
    assert body.read == len(BIG_LOG)


def test_an_hmac_post_is_read_then_checked(tmp_path):
    from bot.db.migrate import upgrade
    from tests.conftest import make_settings

    key = b"ci-hmac-secret-0123456789"
    settings = make_settings(tmp_path / "d", ci_hmac_secret=key.decode())
    upgrade(settings.resolved_database_url)
    app = create_app(settings)
    # A wrong bearer token does not stop a good HMAC: either credential will do.
    good = CountingBody(BIG_LOG)
    headers = {"Authorization": "Bearer wrong", "X-Repairbot-Signature-256": sign(key, BIG_LOG)}
    response = _post_streamed(app, good, headers, "?pipeline=p&build_number=1")
    assert response.status_code == 202, response.text
    assert good.read == len(BIG_LOG)
    forged = CountingBody(BIG_LOG + b"tampered")
    response = _post_streamed(app, forged, {"X-Repairbot-Signature-256": sign(key, BIG_LOG)})
    assert response.status_code == 401 and forged.read == len(BIG_LOG) + len(b"tampered")
    assert _counts(settings) == (1, 1)
