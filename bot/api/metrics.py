"""``/metrics``: Prometheus text, computed from the database so every replica reports the same.

While the database is down it still answers 200: the figures that need no database (whether the
database and the broker answer, this process's 503s and unsent tasks), with
``repairbot_database_up 0``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.api.budget_metrics import BudgetCollector
from bot.api.outage import OutageCollector
from bot.config import Settings
from bot.db.crud import count_by
from bot.db.models import Delivery, RepairRun, Transition
from bot.db.outage import API_UNAVAILABLE
from bot.db.records.contract_checks import ContractCheck
from bot.db.request_scope import get_read_session
from bot.queue.broker_state import broker_state

router = APIRouter()
RECENT = 10_000
log = logging.getLogger(__name__)


def _aware(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; they were stored as UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class DatabaseCollector(Collector):
    """Deliveries by event and outcome, runs by state, time spent reaching each state, and what
    contract checks wrote."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def collect(self) -> Iterator[Metric]:
        """Yield the metric families for one scrape."""
        deliveries = GaugeMetricFamily(
            "repairbot_deliveries", "Deliveries stored", labels=["source", "event", "outcome"]
        )
        for source, event, outcome, count in count_by(
            self._session, Delivery.id, Delivery.source, Delivery.event, Delivery.outcome
        ):
            deliveries.add_metric([source, event, outcome], count)
        yield deliveries
        runs = GaugeMetricFamily("repairbot_runs", "Repair runs by state", labels=["state"])
        for state, count in count_by(self._session, RepairRun.id, RepairRun.state):
            runs.add_metric([state], count)
        yield runs
        reached = GaugeMetricFamily(
            "repairbot_state_reached_seconds_avg",
            f"Mean seconds from run creation to reaching a state (last {RECENT} transitions)",
            labels=["state"],
        )
        rows = self._session.execute(
            select(Transition.to_state, Transition.at, RepairRun.created_at)
            .join(RepairRun, RepairRun.id == Transition.run_id)
            .order_by(Transition.id.desc())
            .limit(RECENT)
        ).all()
        totals: dict[str, list[float]] = defaultdict(list)
        for state, at, created in rows:
            totals[state].append((_aware(at) - _aware(created)).total_seconds())
        for state, values in sorted(totals.items()):
            reached.add_metric([state], sum(values) / len(values))
        yield reached
        yield self._contract_check_writes()

    def _contract_check_writes(self) -> Metric:
        """What the recent contract checks wrote under the data dir: the largest and the sum."""
        written = GaugeMetricFamily(
            "repairbot_contract_check_written",
            f"Files and bytes contract checks wrote under the data dir (last {RECENT} checks)",
            labels=["unit", "stat"],
        )
        recent = (
            select(ContractCheck.written_files, ContractCheck.written_bytes)
            .order_by(ContractCheck.id.desc())
            .limit(RECENT)
            .subquery()
        )
        row = self._session.execute(
            select(
                func.max(recent.c.written_files),
                func.sum(recent.c.written_files),
                func.max(recent.c.written_bytes),
                func.sum(recent.c.written_bytes),
            )
        ).one()
        for (unit, stat), value in zip(
            [("files", "max"), ("files", "sum"), ("bytes", "max"), ("bytes", "sum")],
            row,
            strict=True,
        ):
            written.add_metric([unit, stat], float(value or 0))
        return written


class _Collected(Collector):
    """Metric families already gathered."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        """Yield them."""
        yield from self._families


@router.get("/metrics")
def metrics(request: Request, session: Annotated[Session, Depends(get_read_session)]) -> Response:
    """Prometheus exposition format."""
    settings: Settings = request.app.state.settings
    try:  # gathered here, not while writing the text: an outage must not end it half-written
        families = [
            *DatabaseCollector(session).collect(),
            *BudgetCollector(session, settings).collect(),
        ]
    except API_UNAVAILABLE:
        log.warning("/metrics: the database is unavailable", exc_info=True)
        families = []
    registry = CollectorRegistry()
    registry.register(_Collected(families))
    registry.register(
        OutageCollector(database_up=bool(families), broker_up=broker_state(settings) != "down")
    )
    return Response(generate_latest(registry), media_type="text/plain; version=0.0.4")
