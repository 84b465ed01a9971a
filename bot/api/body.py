"""Reading a request body with a size cap and a deadline, before anything parses it."""

from __future__ import annotations

import asyncio

from fastapi import HTTPException, Request, status


async def read_capped_body(request: Request, limit: int, timeout_s: float) -> bytes:
    """The raw body; 413 as soon as it exceeds ``limit`` (declared or actual length).

    The whole body must arrive within ``timeout_s``: bodies are read before the sender is
    authenticated (HMACs cover the body), so without a deadline anyone could hold connections
    open by sending a partial body slowly. A late body is answered 408 and the connection closed.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, f"body larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise HTTPException(
                        status.HTTP_413_CONTENT_TOO_LARGE, f"body larger than {limit} bytes"
                    )
                chunks.append(chunk)
    except TimeoutError as exc:
        raise HTTPException(
            status.HTTP_408_REQUEST_TIMEOUT,
            f"request body not received within {timeout_s:g} s",
            # The rest of the body may still be on its way: this connection cannot be reused.
            headers={"Connection": "close"},
        ) from exc
    return b"".join(chunks)
