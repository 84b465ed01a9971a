"""The baseline for bench/webhooks.py: a FastAPI endpoint that only checks the HMAC."""

from __future__ import annotations

import hashlib
import hmac
import os

from fastapi import FastAPI, HTTPException, Request

app = FastAPI()
SECRET = os.environ.get("BENCH_SECRET", "").encode()


@app.get("/healthz")
def healthz() -> dict[str, str]:
    """Ready."""
    return {"status": "ok"}


@app.post("/webhooks/github", status_code=202)
async def webhook(request: Request) -> dict[str, str]:
    """Verify the signature of the raw body, then answer."""
    body = await request.body()
    expected = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, request.headers.get("x-hub-signature-256", "")):
        raise HTTPException(401)
    return {"status": "accepted"}
