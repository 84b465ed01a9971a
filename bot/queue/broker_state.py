"""Whether the broker answers: a ping bounded in time, for /readyz and /metrics."""

from __future__ import annotations

from typing import Literal

from kombu.connection import Connection

from bot.config import Settings

BrokerState = Literal["up", "down", "embedded"]
EMBEDDED_SCHEMES = ("durable-files:", "filesystem:")


def broker_state(settings: Settings) -> BrokerState:
    """``embedded`` for the file broker (it is the data dir: up while the API is), else whether
    a connection opens within ``broker_connect_timeout_s`` (Redis's transport pings on it)."""
    url = settings.resolved_broker_url
    if url.startswith(EMBEDDED_SCHEMES):
        return "embedded"
    timeout = settings.broker_connect_timeout_s
    # kombu is untyped. max_retries=0: one attempt, no back-off between attempts.
    connection = Connection(url, connect_timeout=timeout)  # type: ignore[no-untyped-call]
    try:
        connection.ensure_connection(max_retries=0, timeout=timeout)  # type: ignore[no-untyped-call]
    except Exception:  # any failure to connect is "down"; what it was is the broker's log
        return "down"
    finally:
        connection.release()  # type: ignore[no-untyped-call]
    return "up"
