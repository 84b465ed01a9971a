"""``POST /webhooks/github``: verify, record (``bot.intake.deliveries``), answer 202."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session

from bot.api.body import read_capped_body
from bot.api.group_write import committed
from bot.config import Settings
from bot.db.group_commit import WriteKind
from bot.intake.deliveries import (
    DeliveryOutcome,
    GitHubDelivery,
    RecordedDelivery,
    coalesce_key,
    record_deliveries,
)
from bot.intake.webhook_auth import could_be_valid, is_valid

router = APIRouter()

MAX_DELIVERY_ID = 150  # deliveries.key holds "github:" + the id
MAX_EVENT = 64  # deliveries.event
MAX_FORM_FIELDS = 100  # GitHub's form deliveries carry one field, "payload"


# The headers are read from the request, not declared as parameters: FastAPI's parameter
# resolution costs as much CPU per delivery as the batched INSERT (docs/performance.md). The
# OpenAPI document still lists them.
_HEADERS_DOC = {
    "parameters": [
        {"name": name, "in": "header", "required": True, "schema": {"type": "string"}}
        for name in ("X-GitHub-Event", "X-GitHub-Delivery", "X-Hub-Signature-256")
    ]
}


@router.post("/webhooks/github", status_code=status.HTTP_202_ACCEPTED, openapi_extra=_HEADERS_DOC)
async def github_webhook(request: Request) -> JSONResponse:
    """Accept one GitHub delivery. Nothing is read without a signature, nothing parsed before
    it checks out."""
    settings: Settings = request.app.state.settings
    headers = request.headers
    x_github_event = headers.get("x-github-event")
    x_github_delivery = headers.get("x-github-delivery")
    x_hub_signature_256 = headers.get("x-hub-signature-256")
    if not could_be_valid(x_hub_signature_256):
        # Nothing to check the body against (or a header no body can match), so it is never
        # read: the rest of it is not drained either, the connection is closed.
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing or wrong X-Hub-Signature-256",
            headers={"Connection": "close"},
        )
    body = await read_capped_body(
        request, settings.max_webhook_bytes, settings.read_timeout_s, request.app.state.body_budget
    )
    secret = settings.github_webhook_secret.get_secret_value().encode()
    if not is_valid(secret, body, x_hub_signature_256):
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing or wrong X-Hub-Signature-256")
    if not x_github_event or not x_github_delivery:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST, "X-GitHub-Event and X-GitHub-Delivery are required"
        )
    # Refused, not truncated: the delivery id is the dedupe key, and two ids sharing a prefix
    # are two deliveries.
    if len(x_github_delivery) > MAX_DELIVERY_ID or len(x_github_event) > MAX_EVENT:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"X-GitHub-Delivery longer than {MAX_DELIVERY_ID} or X-GitHub-Event longer than "
            f"{MAX_EVENT} characters",
        )
    payload = parse_payload(body, request.headers.get("content-type", ""))
    action = payload.get("action") if isinstance(payload.get("action"), str) else None
    coalesce = coalesce_key(x_github_event, payload)
    delivery = GitHubDelivery(x_github_delivery, x_github_event, action, body, coalesce)
    answer, code = await committed(settings, STORE_DELIVERIES, (delivery, payload.get("zen")))
    return JSONResponse(answer, code)


def _store_all(
    session: Session, items: list[tuple[GitHubDelivery, object]]
) -> list[tuple[dict[str, Any], int]]:
    """Record a batch of deliveries in one INSERT; each one's answer and status code."""
    recorded = record_deliveries(session, [delivery for delivery, _ in items])
    return [
        _answer(delivery, outcome, zen=zen)
        for (delivery, zen), outcome in zip(items, recorded, strict=True)
    ]


STORE_DELIVERIES = WriteKind("github deliveries", _store_all)


def _answer(
    delivery: GitHubDelivery, recorded: RecordedDelivery, *, zen: object
) -> tuple[dict[str, Any], int]:
    """What to answer for a recorded delivery: 200 for a duplicate or a ping, else 202."""
    if recorded.outcome is DeliveryOutcome.DUPLICATE or recorded.delivery_id is None:
        return {"status": "duplicate", "delivery": delivery.delivery_id}, status.HTTP_200_OK
    if recorded.outcome is DeliveryOutcome.PONG:
        return {"status": "pong", "zen": zen}, status.HTTP_200_OK
    if recorded.outcome is DeliveryOutcome.COALESCED:  # stored; an earlier twin does the work
        return {
            "status": "coalesced",
            "delivery_id": recorded.delivery_id,
        }, status.HTTP_202_ACCEPTED
    if recorded.outcome is DeliveryOutcome.IGNORED:
        return {"status": "ignored", "event": delivery.event}, status.HTTP_202_ACCEPTED
    return {"status": "accepted", "delivery_id": recorded.delivery_id}, status.HTTP_202_ACCEPTED


def parse_payload(body: bytes, content_type: str) -> dict[str, Any]:
    """JSON or ``application/x-www-form-urlencoded`` with a ``payload`` field (400 or 415
    with the reason when it is neither; the GitLab and Buildkite routes' bodies are parsed here
    too)."""
    media = content_type.split(";")[0].strip().lower()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST, f"body is not UTF-8 (byte {exc.start})"
        ) from exc
    if media == "application/x-www-form-urlencoded":
        fields = _form_fields(text)
        if "payload" not in fields:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, "form body without a payload field")
        text = fields["payload"][0]
    elif media not in ("application/json", ""):
        raise HTTPException(
            status.HTTP_415_UNSUPPORTED_MEDIA_TYPE, f"unsupported content type {media!r}"
        )
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
        ) from exc
    except RecursionError as exc:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "JSON nested too deeply") from exc
    if not isinstance(payload, dict):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "payload must be a JSON object")
    return payload


def _form_fields(text: str) -> dict[str, list[str]]:
    """The fields of a form body; 400 for too many fields or percent-escapes that are not UTF-8."""
    try:
        return parse_qs(text, max_num_fields=MAX_FORM_FIELDS, errors="strict")
    except UnicodeDecodeError as exc:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST, f"form payload is not UTF-8 (byte {exc.start} of a field)"
        ) from exc
    except ValueError as exc:  # parse_qs: "Max number of fields exceeded"
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST, f"form body with more than {MAX_FORM_FIELDS} fields"
        ) from exc
