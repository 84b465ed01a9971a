"""Stage 1: classify a stored report and create one repair run per root cause."""

from __future__ import annotations

from io import BytesIO

from sqlalchemy import select

from bot.db.crud import move_run
from bot.db.models import Delivery, RepairRun, Report, RunState, utcnow
from bot.repair_plan import plan_runs
from bot.tasks.base import RepairbotTask
from bot.tasks.celery_app import app
from bot.tasks.enqueue import enqueue_after_commit
from fixers.classify import classify_report
from fixers.findings_json import finding_to_dict
from fixers.intake import Format, read_report


@app.task(name="repairbot.triage", base=RepairbotTask, bind=True)
def triage(self: RepairbotTask, report_id: int) -> None:
    """Classify report ``report_id``; safe to rerun (runs are re-enqueued, never duplicated)."""
    with self.session() as session:
        report = session.get(Report, report_id)
        if report is None:
            return
        if report.classified_at is None:
            delivery = session.get_one(Delivery, report.delivery_id)
            parsed = read_report(
                BytesIO(delivery.body), format=Format(report.format), stage=report.stage
            )
            findings = classify_report(parsed)
            report.findings = [finding_to_dict(finding) for finding in findings]
            report.failure_count = len(parsed.failures)
            report.classified_at = utcnow()
            for planned in plan_runs(findings):
                run = RepairRun(
                    report_id=report.id,
                    root_cause=planned.root_cause[:300],
                    signature=planned.signature,
                    contract=planned.contract,
                )
                session.add(run)
                session.flush()
                state = RunState.CLASSIFIED if planned.fixable else RunState.UNCLASSIFIED
                move_run(session, run=run, to=state, reason=planned.reason)
        live = session.scalars(
            select(RepairRun).where(
                RepairRun.report_id == report.id, RepairRun.state == RunState.CLASSIFIED.value
            )
        ).all()
        for run in live:
            enqueue_after_commit(session, "repairbot.repair", run.id)
