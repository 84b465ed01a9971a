"""Posting a Buildkite webhook delivery to the real app and processing it as the worker would,
and the settings that point repairbot at the Buildkite double."""

from __future__ import annotations

import json
import time
from typing import Any, Literal

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import select

from bot.app import create_app
from bot.db.models import Delivery
from bot.db.session import read_scope
from bot.intake.buildkite_auth import sign
from bot.intake.process_delivery import process_delivery
from tests.fakes.buildkite.server import TOKEN, FakeBuildkite

WEBHOOK_TOKEN = "buildkite-webhook-token-for-tests-0123"
Auth = Literal["signature", "token", "none"]


def post_webhook(
    settings: Any,
    event: str,
    payload: dict[str, Any] | bytes,
    *,
    auth: Auth = "signature",
    secret: str = WEBHOOK_TOKEN,
    timestamp: int | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    """The app's answer (an httpx response) to one delivery, as Buildkite would send it."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    sent: dict[str, str] = {"X-Buildkite-Event": event, "Content-Type": "application/json"}
    if auth == "signature":
        when = int(time.time()) if timestamp is None else timestamp
        sent["X-Buildkite-Signature"] = sign(secret.encode(), when, body)
    elif auth == "token":
        sent["X-Buildkite-Token"] = secret
    sent.update(headers or {})
    with TestClient(create_app(settings)) as client:
        return client.post("/webhooks/buildkite", content=body, headers=sent)


def process_stored(settings: Any) -> list[str]:
    """Run ``process_delivery`` for every Buildkite delivery still waiting, oldest first, until
    none waits (a ``build.finished`` stores one delivery per failed job): every task's notes."""
    notes: list[str] = []
    while True:
        with read_scope(settings.resolved_database_url) as session:
            waiting = session.scalars(
                select(Delivery.id)
                .where(Delivery.source == "buildkite", Delivery.outcome == "stored")
                .order_by(Delivery.id)
            ).all()
        if not waiting:
            return notes
        for delivery_id in waiting:
            notes += process_delivery.apply(args=[delivery_id]).get()


def deliver_and_process(
    settings: Any, event: str, payload: dict[str, Any], **post: Any
) -> tuple[dict[str, Any], list[str]]:
    """The app's answer to one signed delivery, and the notes of every task it led to."""
    answer = post_webhook(settings, event, payload, **post)
    assert answer.status_code in (200, 202), answer.text
    return answer.json(), process_stored(settings)


def on_buildkite(settings: Any, buildkite_api: FakeBuildkite, **more: Any) -> Any:
    """``settings`` with Buildkite's webhook token, and its API on the double (and ``more``)."""
    update = {
        "buildkite_webhook_token": SecretStr(WEBHOOK_TOKEN),
        "buildkite_api_url": buildkite_api.url,
        "buildkite_api_token": SecretStr(TOKEN),
        "buildkite_retry_backoff_s": 0.01,
    }
    return settings.model_copy(update={**update, **more})


@pytest.fixture
def bk_settings(settings: Any, buildkite_api: FakeBuildkite, task_settings: Any) -> Any:
    """The ``settings`` fixture (SQLite and PostgreSQL) on the Buildkite double; tasks read
    them too."""
    return task_settings(on_buildkite(settings, buildkite_api))
