"""``POST /webhooks/buildkite``: authenticate, record the delivery, answer 202.

Buildkite sends the webhook's token either as it is (``X-Buildkite-Token``) or as the key of an
HMAC over a timestamp and the body (``X-Buildkite-Signature``; ``bot.intake.buildkite_auth``).
A plain token, a signature's shape and its timestamp (the replay window) are checked before the
body is read; the HMAC once it is, before it is parsed. The delivery is then stored like a
GitHub one (``bot.intake.deliveries``): ``build.finished`` and ``job.finished`` are handled by
``process_delivery`` (``bot.intake.buildkite``), a ``ping`` is answered ``pong``, other events
are kept as ``ignored``. Buildkite sends no delivery id, so the dedupe key is made from what the
delivery is about (``bot.intake.buildkite.delivery_id``): a redelivery, or a replay inside the
window, is answered ``duplicate`` and nothing is done twice.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import JSONResponse

from bot.api.body import read_capped_body
from bot.api.group_write import committed
from bot.api.webhooks import MAX_EVENT, STORE_DELIVERIES, parse_payload
from bot.config import Settings
from bot.intake.buildkite import SOURCE, delivery_id
from bot.intake.buildkite_auth import (
    parse_signature,
    replay_problem,
    signature_matches,
)
from bot.intake.deliveries import GitHubDelivery
from bot.intake.webhook_auth import token_matches

router = APIRouter()

_HEADERS_DOC = {
    "parameters": [
        {"name": name, "in": "header", "required": required, "schema": {"type": "string"}}
        for name, required in (
            ("X-Buildkite-Event", True),
            ("X-Buildkite-Signature", False),
            ("X-Buildkite-Token", False),
        )
    ]
}


def _refused(reason: str) -> HTTPException:
    # The body is not read, nor drained: the connection is closed.
    return HTTPException(status.HTTP_401_UNAUTHORIZED, reason, headers={"Connection": "close"})


def _early_problem(settings: Settings, secret: str, headers: dict[str, str]) -> str | None:
    """Why the request is refused before its body is read, or None."""
    signed, token = headers.get("x-buildkite-signature"), headers.get("x-buildkite-token")
    if signed is not None:
        signature = parse_signature(signed)
        if signature is None:
            return "malformed X-Buildkite-Signature (timestamp=<seconds>,signature=<64 hex>)"
        return replay_problem(
            signature, now=time.time(), max_age_s=settings.buildkite_signature_max_age_s
        )
    if token is None:
        return "missing X-Buildkite-Signature or X-Buildkite-Token"
    if settings.buildkite_require_signature:
        return "X-Buildkite-Token refused: this endpoint takes X-Buildkite-Signature only"
    return None if token_matches(secret, token) else "wrong X-Buildkite-Token"


@router.post(
    "/webhooks/buildkite", status_code=status.HTTP_202_ACCEPTED, openapi_extra=_HEADERS_DOC
)
async def buildkite_webhook(request: Request) -> JSONResponse:
    """Accept one Buildkite delivery; nothing is parsed before it is authenticated."""
    settings: Settings = request.app.state.settings
    if settings.buildkite_webhook_token is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "Buildkite webhooks are off: REPAIRBOT_BUILDKITE_WEBHOOK_TOKEN is not set",
            headers={"Connection": "close"},
        )
    secret = settings.buildkite_webhook_token.get_secret_value()
    headers = dict(request.headers)
    problem = _early_problem(settings, secret, headers)
    if problem is not None:
        raise _refused(problem)
    event = headers.get("x-buildkite-event")
    if not event or len(event) > MAX_EVENT:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"X-Buildkite-Event is required (at most {MAX_EVENT} characters)",
            headers={"Connection": "close"},
        )
    body = await read_capped_body(
        request, settings.max_webhook_bytes, settings.read_timeout_s, request.app.state.body_budget
    )
    signature = parse_signature(headers.get("x-buildkite-signature"))
    if signature is not None and not signature_matches(secret.encode(), signature, body):
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "wrong X-Buildkite-Signature")
    payload = parse_payload(body, headers.get("content-type", ""))
    key = delivery_id(event, payload, body)
    delivery = GitHubDelivery(key, event, None, body, source=SOURCE)
    answer, code = await committed(settings, STORE_DELIVERIES, (delivery, None))
    return JSONResponse(answer, code)
