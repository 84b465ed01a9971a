"""The HTTP server's protocol: uvicorn's h11 protocol with a deadline for a request's headers.

The body has its deadline in ``bot.api.body``; this covers the part before any route runs.
uvicorn waits for request headers as long as a client keeps the connection open (its
keep-alive timer stops at the first byte of the next request), so a client sending headers a
byte at a time would hold a connection forever, unauthenticated.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol


class HeaderDeadlineProtocol(H11Protocol):
    """Closes a connection whose next request's headers are not in within ``header_timeout_s``."""

    header_timeout_s = 20.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """A new connection: its first request's headers are due."""
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        """A response went out: the next request's headers on this connection are due.

        Armed before uvicorn starts a pipelined request, so that one counts as arrived.
        """
        self._arm()
        super().on_response_complete()

    def _arm(self) -> None:
        self.loop.call_later(self.header_timeout_s, self._headers_due, self.cycle)

    def _headers_due(self, previous: object) -> None:
        # A new request cycle began since we armed: its headers arrived in time.
        if self.cycle is previous and not self.transport.is_closing():
            self.transport.close()


def header_deadline_protocol(timeout_s: float) -> type[HeaderDeadlineProtocol]:
    """The protocol class for ``uvicorn.run(http=...)`` with this header deadline."""
    return type(
        "HeaderDeadlineProtocol", (HeaderDeadlineProtocol,), {"header_timeout_s": timeout_s}
    )
