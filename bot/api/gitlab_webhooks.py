"""``POST /webhooks/gitlab``: check the secret token, record the delivery, answer 202.

GitLab sends the webhook's secret token as it is in ``X-Gitlab-Token`` (no signature over the
body), so the token is compared, in constant time, before the body is read. The delivery is
then stored like a GitHub one (``bot.intake.deliveries``): a ``Pipeline Hook`` or ``Job Hook``
is handled by ``process_delivery`` (``bot.intake.gitlab``); other events are kept as
``ignored``. Its idempotency key is GitLab's ``Idempotency-Key`` (the same on every retry of a
delivery), else ``X-Gitlab-Event-UUID``, else a digest of the body: a redelivery is answered
``duplicate`` and nothing is done twice.
"""

from __future__ import annotations

import hashlib

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import JSONResponse

from bot.api.body import read_capped_body
from bot.api.group_write import committed
from bot.api.webhooks import MAX_DELIVERY_ID, MAX_EVENT, STORE_DELIVERIES, parse_payload
from bot.config import Settings
from bot.intake.deliveries import GitHubDelivery
from bot.intake.webhook_auth import token_matches

router = APIRouter()

_HEADERS_DOC = {
    "parameters": [
        {"name": name, "in": "header", "required": required, "schema": {"type": "string"}}
        for name, required in (
            ("X-Gitlab-Token", True),
            ("X-Gitlab-Event", True),
            ("Idempotency-Key", False),
            ("X-Gitlab-Event-UUID", False),
        )
    ]
}


def delivery_id(headers: dict[str, str], body: bytes) -> str:
    """What identifies this delivery across GitLab's retries (see the module docstring)."""
    given = headers.get("idempotency-key") or headers.get("x-gitlab-event-uuid")
    if given:
        return given
    return "sha256:" + hashlib.sha256(body).hexdigest()


@router.post("/webhooks/gitlab", status_code=status.HTTP_202_ACCEPTED, openapi_extra=_HEADERS_DOC)
async def gitlab_webhook(request: Request) -> JSONResponse:
    """Accept one GitLab delivery; nothing is read before its token checks out."""
    settings: Settings = request.app.state.settings
    headers = request.headers
    if settings.gitlab_webhook_token is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "GitLab webhooks are off: REPAIRBOT_GITLAB_WEBHOOK_TOKEN is not set",
            headers={"Connection": "close"},
        )
    expected = settings.gitlab_webhook_token.get_secret_value()
    if not token_matches(expected, headers.get("x-gitlab-token")):
        # The body is never read, nor drained: the connection is closed.
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing or wrong X-Gitlab-Token",
            headers={"Connection": "close"},
        )
    event = headers.get("x-gitlab-event")
    if not event or len(event) > MAX_EVENT:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"X-Gitlab-Event is required (at most {MAX_EVENT} characters)",
            headers={"Connection": "close"},
        )
    body = await read_capped_body(
        request, settings.max_webhook_bytes, settings.read_timeout_s, request.app.state.body_budget
    )
    key = delivery_id(dict(headers), body)
    if len(key) > MAX_DELIVERY_ID:  # refused, not truncated: the key is the dedupe key
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST,
            f"Idempotency-Key or X-Gitlab-Event-UUID longer than {MAX_DELIVERY_ID} characters",
        )
    payload = parse_payload(body, headers.get("content-type", ""))
    kind = payload.get("object_kind")
    delivery = GitHubDelivery(
        key, event, kind[:64] if isinstance(kind, str) else None, body, source="gitlab"
    )
    answer, code = await committed(settings, STORE_DELIVERIES, (delivery, None))
    return JSONResponse(answer, code)
