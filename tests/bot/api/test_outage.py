"""PostgreSQL down, for real: a private cluster (``bench.postgres_server``) is stopped under a
running app. Every route answers 503 with Retry-After, /metrics still answers, nothing that got a
2xx is lost, and once the server is back the same app answers 2xx again without a restart.

The machine's shared PostgreSQL (127.0.0.1:5432) serves the other tests meanwhile: never this one.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import create_engine, select, text
from sqlalchemy.exc import OperationalError

from bench.postgres_server import PrivatePostgres
from bot.app import create_app
from bot.config import Settings
from bot.db.migrate import upgrade
from bot.db.models import CiFailure, Delivery
from bot.db.session import engine_for, session_scope
from bot.intake.webhook_auth import sign
from tests.conftest import CI_TOKEN, SECRET, make_settings
from tests.fakes.buildkite.deliveries import WEBHOOK_TOKEN as BUILDKITE_TOKEN
from tests.fakes.gitlab.deliveries import WEBHOOK_TOKEN as GITLAB_TOKEN

RETRY_AFTER = 7
REPORT = (
    "/api/v1/ci-failures?pipeline=L0_MergeRequest_PR&build_number={build}"
    "&repository=/srv/repos/x&head_sha=abcdef1&stage=H100_PCIe-PyTorch-1"
)
CONSOLE = Path(__file__).parents[2] / "fixtures" / "logs" / "py311" / "combined.console.txt"


@pytest.fixture(scope="module")
def private_postgres() -> Iterator[PrivatePostgres]:
    server = PrivatePostgres().start()
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture
def outage_settings(private_postgres: PrivatePostgres, tmp_path: Path) -> Iterator[Settings]:
    if not _answers(private_postgres):
        private_postgres.start()  # an earlier test failed while it was stopped
    url = private_postgres.create_database(f"outage_{uuid.uuid4().hex[:8]}")
    settings = make_settings(
        tmp_path / "data", database_url=url, database_retry_after_s=RETRY_AFTER
    )
    upgrade(settings.resolved_database_url)
    yield settings
    engine_for(settings.resolved_database_url).dispose()


def _answers(server: PrivatePostgres) -> bool:
    engine = create_engine(server.url, connect_args={"connect_timeout": 2})
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        return True
    except OperationalError:
        return False
    finally:
        engine.dispose()


def _deliver(client: TestClient, delivery: str) -> int:
    body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
    answer = client.post(
        "/webhooks/github",
        content=body,
        headers={
            "X-GitHub-Event": "ping",
            "X-GitHub-Delivery": delivery,
            "Content-Type": "application/json",
            "X-Hub-Signature-256": sign(SECRET.encode(), body),
        },
    )
    _check_unavailable_shape(answer)
    return answer.status_code


def _report(client: TestClient, build: int) -> int:
    answer = client.post(
        REPORT.format(build=build),
        content=CONSOLE.read_bytes(),
        headers={"Authorization": f"Bearer {CI_TOKEN}"},
    )
    _check_unavailable_shape(answer)
    return answer.status_code


def _check_unavailable_shape(answer) -> None:  # type: ignore[no-untyped-def]
    if answer.status_code == 503:
        assert answer.headers["Retry-After"] == str(RETRY_AFTER)
        assert answer.json()["database"] == "down", answer.text


def _metric(text: str, name: str) -> float:
    (line,) = [line for line in text.splitlines() if line.startswith(f"{name} ")]
    return float(line.split()[1])


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_postgresql_down_answers_503_with_retry_after_and_recovers_without_restart(
    private_postgres: PrivatePostgres, outage_settings: Settings, mode: str
) -> None:
    with TestClient(create_app(outage_settings)) as client:
        assert _deliver(client, "before-the-outage") // 100 == 2
        assert client.get("/api/v1/fixes").status_code == 200  # a pooled connection is left
        private_postgres.stop(mode)  # fast: clients disconnected; immediate: as a crash
        try:
            assert _deliver(client, "during-the-outage") == 503
            assert _report(client, build=1) == 503
            for path in ("/api/v1/fixes", "/api/v1/reports/1"):
                answer = client.get(path)
                assert answer.status_code == 503 and answer.headers["Retry-After"] == "7", path
            page = client.get("/", headers={"Accept": "text/html"})
            assert page.status_code == 503 and "Database unavailable" in page.text
            assert page.headers["Retry-After"] == str(RETRY_AFTER)
            ready = client.get("/readyz")
            assert ready.status_code == 503 and ready.headers["Retry-After"] == "7"
            assert ready.json()["database"] == "down" and ready.json()["broker"] == "embedded"
            metrics = client.get("/metrics")
            assert metrics.status_code == 200
            assert _metric(metrics.text, "repairbot_database_up") == 0
            assert _metric(metrics.text, "repairbot_broker_up") == 1
            assert _metric(metrics.text, "repairbot_database_unavailable_responses_total") >= 6
        finally:
            private_postgres.start()
        # The same app, no restart: GitHub's redelivery and the CI's retry are accepted now.
        assert _deliver(client, "during-the-outage") // 100 == 2
        assert _report(client, build=1) == 202
        assert client.get("/", headers={"Accept": "text/html"}).status_code == 200
        ready = client.get("/readyz")
        assert ready.status_code == 200 and ready.json()["status"] == "ready", ready.text
        metrics = client.get("/metrics").text
        assert _metric(metrics, "repairbot_database_up") == 1
        assert "repairbot_runs" in metrics
    with session_scope(outage_settings.resolved_database_url) as session:
        stored = {key.rsplit(":", 1)[-1] for key in session.scalars(select(Delivery.key))}
        reports = session.scalars(select(CiFailure.build_number)).all()
    assert {"before-the-outage", "during-the-outage"} <= stored
    assert reports == [1]


def test_gitlab_and_buildkite_deliveries_in_an_outage_get_503_and_their_retries_are_stored(
    private_postgres: PrivatePostgres, outage_settings: Settings
) -> None:
    """The other CIs' webhooks take the same path: refused with Retry-After while PostgreSQL is
    down (each CI retries a 5xx), stored once when the retry comes after it is back."""
    settings = outage_settings.model_copy(
        update={
            "gitlab_webhook_token": SecretStr(GITLAB_TOKEN),
            "buildkite_webhook_token": SecretStr(BUILDKITE_TOKEN),
        }
    )
    pipeline = json.dumps({"object_kind": "pipeline", "object_attributes": {"id": 1}}).encode()
    agent = json.dumps({"event": "agent.connected", "agent": {"id": "a-1"}}).encode()
    gitlab = {"X-Gitlab-Event": "Pipeline Hook", "X-Gitlab-Token": GITLAB_TOKEN,
              "X-Gitlab-Event-UUID": "gl-1", "Content-Type": "application/json"}  # fmt: skip
    buildkite = {"X-Buildkite-Event": "agent.connected", "X-Buildkite-Token": BUILDKITE_TOKEN,
                 "Content-Type": "application/json"}  # fmt: skip
    with TestClient(create_app(settings)) as client:

        def both() -> list[int]:
            answers = [
                client.post("/webhooks/gitlab", content=pipeline, headers=gitlab),
                client.post("/webhooks/buildkite", content=agent, headers=buildkite),
            ]
            for answer in answers:
                _check_unavailable_shape(answer)
            return [answer.status_code for answer in answers]

        private_postgres.stop("immediate")
        try:
            assert both() == [503, 503]
        finally:
            private_postgres.start()
        assert both() == [202, 202]
        assert [answer // 100 for answer in both()] == [2, 2]  # a second retry: duplicates
    with session_scope(settings.resolved_database_url) as session:
        sources = sorted(session.scalars(select(Delivery.source)))
    assert sources == ["buildkite", "gitlab"]
