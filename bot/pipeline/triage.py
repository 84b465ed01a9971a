"""Stage 1: classify a stored report and create one repair run per root cause."""

from __future__ import annotations

from io import BytesIO

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.crud import move_run
from bot.db.models import CiFailure, Delivery, RepairRun, RunState, utcnow
from bot.db.rows import contract_to_row, store_findings
from bot.db.session import session_scope
from bot.pipeline.repair.plan import plan_runs
from bot.pipeline.task_base import RepairbotTask
from bot.queue import names as task_names
from bot.queue.celery_app import app
from bot.queue.starts import start_repair
from fixers.classify.root_causes import classify_report
from fixers.intake import Format, read_report


@app.task(name=task_names.TRIAGE, base=RepairbotTask, bind=True)
def triage(self: RepairbotTask, report_id: int) -> None:
    """Classify report ``report_id``; safe to rerun (runs are re-enqueued, never duplicated)."""
    triage_report(self.settings, report_id)


def triage_report(settings: Settings, report_id: int) -> None:
    """Classify the report once, then (again on every call) send its classified runs to repair."""
    with session_scope(settings.resolved_database_url) as session:
        report = session.get(CiFailure, report_id)
        if report is None:
            return
        if report.classified_at is None:
            classify(session, report)
        live = session.scalars(
            select(RepairRun).where(
                RepairRun.report_id == report.id, RepairRun.state == RunState.CLASSIFIED.value
            )
        ).all()
        for run in live:
            start_repair(session, run.id)


def classify(session: Session, report: CiFailure) -> None:
    """Store the report's findings and create its runs, classified or unclassified."""
    delivery = session.get_one(Delivery, report.delivery_id)
    parsed = read_report(
        BytesIO(delivery.content()), format=Format(report.format), stage=report.stage
    )
    findings = classify_report(parsed)
    store_findings(report, findings)
    report.failure_count = len(parsed.failures)
    report.classified_at = utcnow()
    for planned in plan_runs(findings):
        run = RepairRun(
            report_id=report.id,
            root_cause=planned.root_cause[:300],
            signature=planned.signature,
            contract=contract_to_row(planned.contract),
        )
        session.add(run)
        session.flush()
        state = RunState.CLASSIFIED if planned.fixable else RunState.UNCLASSIFIED
        move_run(session, run=run, to=state, reason=planned.reason)
