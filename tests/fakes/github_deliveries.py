"""Posting one signed GitHub delivery to the app and processing it, as the worker would: the
delivery's task, then the GitHub writes it deferred (``repairbot.send_github_write``)."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select

from bot.app import create_app
from bot.db.records.github_writes import GitHubWrite
from bot.db.session import read_scope
from bot.intake.process_delivery import process_delivery
from bot.intake.webhook_auth import sign
from bot.pipeline.github_send import send_write
from tests.conftest import SECRET


def deliver_and_process(
    settings: Any, event: str, payload: dict[str, Any], delivery: str
) -> tuple[int, Any]:
    """``(delivery_id, the task's notes)`` for one signed delivery."""
    body = json.dumps(payload).encode()
    with TestClient(create_app(settings)) as client:
        answer = client.post(
            "/webhooks/github",
            content=body,
            headers={
                "X-GitHub-Event": event,
                "X-GitHub-Delivery": delivery,
                "X-Hub-Signature-256": sign(SECRET.encode(), body),
            },
        ).json()
    notes = process_delivery.apply(args=[answer["delivery_id"]]).get()
    send_pending_writes(settings)
    return answer["delivery_id"], notes


def send_pending_writes(settings: Any) -> list[str]:
    """Send every deferred GitHub write not sent yet, oldest first, as the worker's
    ``repairbot.send_github_write`` tasks would once their transaction committed."""
    with read_scope(settings.resolved_database_url) as session:
        pending = session.scalars(
            select(GitHubWrite.id)
            .where(GitHubWrite.request.is_not(None), GitHubWrite.remote_id.is_(None))
            .where(GitHubWrite.error.is_(None))
            .order_by(GitHubWrite.id)
        ).all()
    return [send_write(settings, write_id) for write_id in pending]
