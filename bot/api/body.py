"""Reading a request body with a size cap, before anything parses it."""

from __future__ import annotations

from fastapi import HTTPException, Request, status


async def read_capped_body(request: Request, limit: int) -> bytes:
    """The raw body; 413 as soon as it exceeds ``limit`` (declared or actual length)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, f"body larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HTTPException(
                status.HTTP_413_CONTENT_TOO_LARGE, f"body larger than {limit} bytes"
            )
        chunks.append(chunk)
    return b"".join(chunks)
