"""Reading a request body with a size cap and a deadline, before anything parses it."""

from __future__ import annotations

import asyncio

from fastapi import HTTPException, Request, status


class BodyBudget:
    """Bytes of request bodies being read right now, all requests together, against a cap.

    Each request's own cap bounds one body; this bounds how many such bodies the process holds
    at once, so a burst of large posts (each allowed alone) answers 503 instead of growing the
    process by the size of every one of them.

    A plain counter, no lock: every body is read on the one event loop, and nothing awaits
    between a check and its update, so no two requests can interleave inside ``charge``.
    """

    __slots__ = ("cap", "held")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.held = 0

    def charge(self, size: int) -> bool:
        """Take ``size`` more bytes; False (nothing taken) when that would pass the cap."""
        if self.held + size > self.cap:
            return False
        self.held += size
        return True

    def release(self, size: int) -> None:
        """Give back ``size`` bytes a request had taken."""
        self.held -= size


def _over_budget(budget: BodyBudget) -> HTTPException:
    return HTTPException(
        status.HTTP_503_SERVICE_UNAVAILABLE,
        f"too many request bodies being received at once (over {budget.cap} bytes): retry",
        # The rest of this body is still on its way and will not be read.
        headers={"Retry-After": "1", "Connection": "close"},
    )


async def read_capped_body(
    request: Request, limit: int, timeout_s: float, budget: BodyBudget
) -> bytes:
    """The raw body; 413 as soon as it exceeds ``limit`` (declared or actual length).

    Every chunk is charged to ``budget`` as it arrives and all of it given back when the read
    ends, however it ends: a chunk that would take the process past the budget's cap is
    answered 503 with ``Retry-After`` and the connection closed.

    The whole body must arrive within ``timeout_s``: some bodies are read before the sender is
    authenticated (HMACs cover the body), so without a deadline anyone could hold connections
    open by sending a partial body slowly. A late body is answered 408 and the connection closed.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, f"body larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0  # read, and charged to the budget
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                if size + len(chunk) > limit:
                    raise HTTPException(
                        status.HTTP_413_CONTENT_TOO_LARGE, f"body larger than {limit} bytes"
                    )
                if not budget.charge(len(chunk)):
                    raise _over_budget(budget)
                size += len(chunk)
                chunks.append(chunk)
    except TimeoutError as exc:
        raise HTTPException(
            status.HTTP_408_REQUEST_TIMEOUT,
            f"request body not received within {timeout_s:g} s",
            # The rest of the body may still be on its way: this connection cannot be reused.
            headers={"Connection": "close"},
        ) from exc
    finally:
        budget.release(size)
    return b"".join(chunks)
