"""``POST /webhooks/github``: verify, record (``bot.intake.deliveries``), answer 202."""

from __future__ import annotations

import json
from typing import Annotated, Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Header, HTTPException, Request, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from bot.api.body import read_capped_body
from bot.api.deps import get_app_settings
from bot.config import Settings
from bot.db.session import session_scope
from bot.intake.deliveries import DeliveryOutcome, GitHubDelivery, record_delivery
from bot.intake.webhook_auth import is_valid

router = APIRouter()

MAX_DELIVERY_ID = 150  # deliveries.key holds "github:" + the id
MAX_EVENT = 64  # deliveries.event
MAX_FORM_FIELDS = 100  # GitHub's form deliveries carry one field, "payload"


@router.post("/webhooks/github", status_code=status.HTTP_202_ACCEPTED)
async def github_webhook(
    request: Request,
    settings: Annotated[Settings, Depends(get_app_settings)],
    x_github_event: Annotated[str | None, Header()] = None,
    x_github_delivery: Annotated[str | None, Header()] = None,
    x_hub_signature_256: Annotated[str | None, Header()] = None,
) -> JSONResponse:
    """Accept one GitHub delivery. Nothing is parsed before the signature checks out."""
    body = await read_capped_body(request, settings.max_webhook_bytes, settings.read_timeout_s)
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
    payload = _parse_payload(body, request.headers.get("content-type", ""))
    action = payload.get("action") if isinstance(payload.get("action"), str) else None
    delivery = GitHubDelivery(x_github_delivery, x_github_event, action, body)
    # Database work runs in a worker thread: a blocking SQLite lock wait must never stall the loop.
    answer, code = await run_in_threadpool(_store, settings, delivery, zen=payload.get("zen"))
    return JSONResponse(answer, code)


def _store(
    settings: Settings, delivery: GitHubDelivery, *, zen: object
) -> tuple[dict[str, Any], int]:
    """Record the delivery and say how: 200 for a duplicate or a ping, else 202."""
    with session_scope(settings.resolved_database_url) as session:
        recorded = record_delivery(session, delivery)
        if recorded.outcome is DeliveryOutcome.DUPLICATE or recorded.delivery is None:
            return {"status": "duplicate", "delivery": delivery.delivery_id}, status.HTTP_200_OK
        if recorded.outcome is DeliveryOutcome.PONG:
            return {"status": "pong", "zen": zen}, status.HTTP_200_OK
        if recorded.outcome is DeliveryOutcome.IGNORED:
            return {"status": "ignored", "event": delivery.event}, status.HTTP_202_ACCEPTED
        answer = {"status": "accepted", "delivery_id": recorded.delivery.id}
        return answer, status.HTTP_202_ACCEPTED


def _parse_payload(body: bytes, content_type: str) -> dict[str, Any]:
    """JSON or ``application/x-www-form-urlencoded`` with a ``payload`` field."""
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
