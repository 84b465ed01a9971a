"""The HTTP server's protocol: uvicorn's h11 protocol with a deadline for a request's headers.

The body has its deadline in ``bot.api.body``; this covers the part before any route runs.
uvicorn waits for request headers as long as a client keeps the connection open (its
keep-alive timer stops at the first byte of the next request), so a client sending headers a
byte at a time would hold a connection forever, unauthenticated.
"""

from __future__ import annotations

import asyncio
import weakref

from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle


class HeaderDeadlineProtocol(H11Protocol):
    """Closes a connection whose next request's headers are not in within ``header_timeout_s``."""

    header_timeout_s = 20.0
    _deadline: asyncio.TimerHandle | None = None

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
        # One timer per connection, holding only a weak reference to the finished cycle: a timer
        # per response that kept its cycle (and the request's body) alive for header_timeout_s
        # would pile thousands of them into the oldest GC generation under load.
        if self._deadline is not None:
            self._deadline.cancel()
        previous = None if self.cycle is None else weakref.ref(self.cycle)
        self._deadline = self.loop.call_later(self.header_timeout_s, self._headers_due, previous)

    def _headers_due(self, previous: weakref.ref[RequestResponseCycle] | None) -> None:
        # A new request cycle began since we armed: its headers arrived in time.
        current = None if previous is None else previous()
        if self.cycle is current and not self.transport.is_closing():
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        """The connection closed: its deadline no longer applies."""
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)


def header_deadline_protocol(timeout_s: float) -> type[HeaderDeadlineProtocol]:
    """The protocol class for ``uvicorn.run(http=...)`` with this header deadline."""
    return type(
        "HeaderDeadlineProtocol", (HeaderDeadlineProtocol,), {"header_timeout_s": timeout_s}
    )
