"""The baseline for bench/webhooks.py: FastAPI endpoints that only authenticate the request.

``/webhooks/github`` checks the HMAC of the raw body; ``/api/v1/ci-failures`` reads the body and
checks the bearer token. Neither stores anything: the ratio to them is what repairbot's
parsing, dedupe and durable storage cost.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from fastapi import FastAPI, HTTPException, Request

app = FastAPI()
SECRET = os.environ.get("BENCH_SECRET", "").encode()
CI_TOKEN = os.environ.get("BENCH_CI_TOKEN", "").encode()


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


@app.post("/api/v1/ci-failures", status_code=202)
async def ci_failure(request: Request) -> dict[str, str]:
    """Read the whole report, check the bearer token, then answer."""
    await request.body()
    token = request.headers.get("authorization", "").removeprefix("Bearer ").encode()
    if not hmac.compare_digest(token, CI_TOKEN):
        raise HTTPException(401)
    return {"status": "accepted"}
