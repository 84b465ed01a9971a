"""The baseline for bench/webhooks.py: FastAPI endpoints that only authenticate the request.

``/webhooks/github`` checks the HMAC of the raw body; ``/api/v1/ci-failures`` reads the body and
checks the bearer token. Neither stores anything: the ratio to them is what repairbot's
parsing, dedupe and durable storage cost.

With ``BENCH_COMPRESS_REPORTS=1`` the CI endpoint also compresses each report as repairbot stores
it (:func:`bot.db.body_codec.encode_body`, zstd level 1), in the handler, and keeps nothing: a
floor for storing 1 MB logs on a disk too slow to take them raw (see that module), with no
database at all.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from fastapi import FastAPI, HTTPException, Request

from bot.db.body_codec import encode_body

app = FastAPI()
SECRET = os.environ.get("BENCH_SECRET", "").encode()
CI_TOKEN = os.environ.get("BENCH_CI_TOKEN", "").encode()
COMPRESS_REPORTS = os.environ.get("BENCH_COMPRESS_REPORTS") == "1"


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
    """Read the whole report, check the bearer token, compress it if asked, then answer."""
    body = await request.body()
    token = request.headers.get("authorization", "").removeprefix("Bearer ").encode()
    if not hmac.compare_digest(token, CI_TOKEN):
        raise HTTPException(401)
    if COMPRESS_REPORTS:
        # Inline, on the event loop: measured faster here than a thread-pool hop per report
        # (zstd releases the GIL either way), so this is the more demanding floor of the two.
        encode_body(body)
    return {"status": "accepted"}
