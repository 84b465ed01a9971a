"""Answers while the database is down, and what /metrics and /readyz say about the outage.

Every route answers 503 with ``Retry-After`` when the database cannot be used (stopped,
restarting, refusing connections, a connection dropped mid-request, no pooled connection in
time): GitHub and the CIs redeliver a delivery that was refused, and nothing that got a 2xx was
lost, because the intake answers only after its rows committed (``bot.db.group_commit``). The
engine replaces dead connections (``pool_pre_ping``), so the API recovers by itself once the
server is back.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

from fastapi import Request, status
from fastapi.responses import JSONResponse, Response
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from bot.config import Settings
from bot.queue.breaker import BREAKER

UNAVAILABLE = "the database is unavailable; nothing was stored: retry after Retry-After seconds"
log = logging.getLogger(__name__)


class _Answers:
    """503s answered by this process because the database was unavailable."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def add(self) -> None:
        """Count one."""
        with self._lock:
            self.count += 1


ANSWERED_UNAVAILABLE = _Answers()


def counted_retry_after(settings: Settings) -> dict[str, str]:
    """The headers of a 503 for an unavailable database; counts the answer
    (``repairbot_database_unavailable_responses_total``)."""
    ANSWERED_UNAVAILABLE.add()
    return {"Retry-After": str(settings.database_retry_after_s)}


def unavailable_json(request: Request, exc: Exception) -> Response:
    """The API's 503 for ``exc``, a database error that means "try again later"."""
    settings: Settings = request.app.state.settings
    log.warning(
        "database unavailable: %s %r answered 503 (%s: %s)",
        request.method,
        request.url.path,
        type(exc).__name__,
        str(exc).splitlines()[0][:200] if str(exc) else "",
    )
    return JSONResponse(
        {"detail": UNAVAILABLE, "database": "down"},
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers=counted_retry_after(settings),
    )


class OutageCollector(Collector):
    """Whether the database and the broker answer, and what this process did while they did
    not."""

    def __init__(self, *, database_up: bool, broker_up: bool) -> None:
        self._database_up = database_up
        self._broker_up = broker_up

    def collect(self) -> Iterator[Metric]:
        """Yield the metric families for one scrape."""
        yield GaugeMetricFamily(
            "repairbot_database_up",
            "1 if this scrape could read the database, else 0",
            value=int(self._database_up),
        )
        yield GaugeMetricFamily(
            "repairbot_broker_up",
            "1 if the broker answered a ping (the embedded file broker: always 1), else 0",
            value=int(self._broker_up),
        )
        yield CounterMetricFamily(
            "repairbot_database_unavailable_responses",
            "Requests this process answered 503 because the database was unavailable "
            "(per process: sum over replicas)",
            value=ANSWERED_UNAVAILABLE.count,
        )
        yield CounterMetricFamily(
            "repairbot_broker_send_failures",
            "Tasks this process did not send because the broker was down (the send failed, or "
            "was skipped while sends paused); the reconciler sends them later (per process)",
            value=BREAKER.failures,
        )
