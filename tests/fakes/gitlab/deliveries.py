"""Posting a GitLab webhook delivery to the real app and processing it as the worker would,
and the settings that point repairbot at the GitLab double."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from bot.app import create_app
from bot.intake.process_delivery import process_delivery
from tests.fakes.github_deliveries import send_pending_writes
from tests.fakes.gitlab.server import TOKEN, FakeGitLab

WEBHOOK_TOKEN = "gitlab-webhook-token-for-tests-0123"


def post_hook(
    settings: Any,
    event: str,
    payload: dict[str, Any] | bytes,
    *,
    uuid: str | None,
    token: str | bytes | None = WEBHOOK_TOKEN,
    headers: dict[str, str] | None = None,
) -> Any:
    """The app's answer (an httpx response) to one delivery, as GitLab would send it."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    sent: dict[str, str | bytes] = {
        "X-Gitlab-Event": event,
        "Content-Type": "application/json",
        **(headers or {}),
    }
    if token is not None:
        sent["X-Gitlab-Token"] = token
    if uuid is not None:
        sent["X-Gitlab-Event-UUID"] = uuid
    with TestClient(create_app(settings)) as client:
        return client.post("/webhooks/gitlab", content=body, headers=sent)


def deliver_and_process(
    settings: Any, event: str, payload: dict[str, Any], uuid: str
) -> tuple[dict[str, Any], list[str]]:
    """The app's answer to one delivery, and its task's notes (none for a duplicate); the
    writes it deferred are sent too."""
    answer = post_hook(settings, event, payload, uuid=uuid).json()
    if "delivery_id" not in answer:
        return answer, []
    notes = process_delivery.apply(args=[answer["delivery_id"]]).get()
    send_pending_writes(settings)
    return answer, notes


@pytest.fixture
def gl_settings(settings: Any, gitlab_api: FakeGitLab, task_settings: Any) -> Any:
    """The ``settings`` fixture (SQLite and PostgreSQL) on the GitLab double; tasks read them."""
    return task_settings(
        settings.model_copy(
            update={
                "forge": "gitlab",
                "gitlab_url": gitlab_api.url,
                "gitlab_token": SecretStr(TOKEN),
                "gitlab_webhook_token": SecretStr(WEBHOOK_TOKEN),
                "gitlab_git_url_template": gitlab_api.git_url_template,
                "gitlab_retry_backoff_s": 0.01,
                "github_seconds_between_writes": 0.0,
            }
        )
    )
