"""Posting one signed GitHub delivery to the app and processing it, as the worker would."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from bot.app import create_app
from bot.intake.process_delivery import process_delivery
from bot.intake.webhook_auth import sign
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
    return answer["delivery_id"], process_delivery.apply(args=[answer["delivery_id"]]).get()
