"""The Celery stages called directly (same code the workers run), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from bot.app import create_app
from bot.cli.demo_target import build_target
from bot.db.crud import move_run
from bot.db.models import (
    CiFailure,
    CommandInvocation,
    Delivery,
    RepairRun,
    RunState,
    Transition,
    utcnow,
)
from bot.db.session import session_scope
from bot.pipeline.reconcile.task import reconcile_once
from bot.queue.names import APPLY_FIX
from bot.version import __version__
from tests.conftest import CI_TOKEN

LOGS = Path(__file__).parents[3] / "fixtures" / "logs"


def _head_revision() -> str:
    """The newest Alembic revision (what a migrated database reports)."""
    from alembic.script import ScriptDirectory

    from bot.db.migrate import alembic_config

    return str(ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head())


@pytest.fixture
def use_settings(settings, task_settings):
    """This test's settings, given to the tasks it runs."""
    return task_settings(settings)


def _post(settings, body: bytes, query: str = "") -> int:
    with TestClient(create_app(settings)) as client:
        response = client.post(
            f"/api/v1/ci-failures{query}",
            content=body,
            headers={"Authorization": f"Bearer {CI_TOKEN}"},
        )
    assert response.status_code == 202, response.text
    return int(response.json()["report_id"])


def test_triage_creates_one_run_per_contract_and_is_rerunnable(use_settings):
    from bot.pipeline.triage import triage

    report_id = _post(use_settings, (LOGS / "py312" / "combined.console.txt").read_bytes())
    triage.run(report_id)
    triage.run(report_id)
    with session_scope(use_settings.resolved_database_url) as session:
        report = session.get_one(CiFailure, report_id)
        assert report.classified_at is not None and report.failure_count == 9
        assert sorted(f["signature"] for f in report.findings) == [
            "abstract-method-missing",
            "abstract-method-missing",
            "contract-forward-override",
        ]
        runs = report.runs
        assert [(r.signature, r.state) for r in runs] == [
            ("contract-forward-override", "classified")
        ]
        assert runs[0].contract["base"] == "SpecWorkerBase"


def test_unfixable_reports_end_unclassified_with_the_reason(use_settings):
    from bot.pipeline.triage import triage

    report_id = _post(use_settings, (LOGS / "py313" / "unrelated.console.txt").read_bytes())
    triage.run(report_id)
    with session_scope(use_settings.resolved_database_url) as session:
        run = session.scalars(select(RepairRun).where(RepairRun.report_id == report_id)).one()
        assert run.state == "unclassified"
        assert "No module named 'flash_attn'" in run.reason


def test_repair_refuses_repositories_outside_the_allowed_roots(use_settings, tmp_path):
    from bot.pipeline.repair.task import repair
    from bot.pipeline.triage import triage

    repo = tmp_path / "elsewhere"
    head = build_target(repo)
    use_settings.repository_roots = [tmp_path / "allowed"]
    report_id = _post(
        use_settings,
        (LOGS / "py312" / "contract_override.console.txt").read_bytes(),
        f"?repository={repo}&head_sha={head}",
    )
    triage.run(report_id)
    with session_scope(use_settings.resolved_database_url) as session:
        run_id = session.scalars(select(RepairRun.id).where(RepairRun.report_id == report_id)).one()
    repair.run(run_id)
    with session_scope(use_settings.resolved_database_url) as session:
        run = session.get_one(RepairRun, run_id)
        assert run.state == "error" and "outside the allowed roots" in run.reason


def test_terminal_states_are_final(use_settings):
    report_id = _post(use_settings, (LOGS / "py312" / "contract_override.console.txt").read_bytes())
    with session_scope(use_settings.resolved_database_url) as session:
        run = RepairRun(report_id=report_id, root_cause="x", signature="s")
        session.add(run)
        session.flush()
        assert move_run(session, run=run, to=RunState.PR_OPENED, reason="done")
        assert not move_run(session, run=run, to=RunState.DUPLICATE, reason="late duplicate")
        assert run.state == "pr_opened"
        assert (
            len(session.scalars(select(Transition).where(Transition.run_id == run.id)).all()) == 1
        )


def test_reconciler_resends_stale_work_once_per_period(use_settings):
    report_id = _post(use_settings, (LOGS / "py312" / "contract_override.console.txt").read_bytes())
    folder = Path(use_settings.broker_transport_options["data_folder_in"])
    for message in folder.glob("*.msg"):  # the queue drained: what is unfinished now was lost
        message.unlink()
    sent_by_api = 0
    with session_scope(use_settings.resolved_database_url) as session:
        report = session.get_one(CiFailure, report_id)
        report.triage_sent_at = utcnow() - timedelta(seconds=60)
        stale = RepairRun(
            report_id=report_id,
            root_cause="y",
            signature="s",
            state="patched",
            updated_at=utcnow() - timedelta(seconds=60),
        )
        session.add(stale)
        lost = Delivery(
            source="github",
            key="github:lost",
            event="issue_comment",
            action="created",
            body=b"{}",
            dispatched_at=utcnow() - timedelta(seconds=60),
        )
        session.add(lost)
        long_ago, now = utcnow() - timedelta(seconds=60), utcnow()
        for outcome, sent_at in (("queued", long_ago), ("queued", now), ("pushed", long_ago)):
            session.add(  # an apply-fix whose message was lost; one just sent; one answered
                CommandInvocation(
                    repository="o/r",
                    pr_number=5,
                    author="maintainer",
                    text="/repairbot apply-fix",
                    command="apply-fix",
                    outcome=outcome,
                    comment_id=4_000_000_001,  # GitHub's comment ids pass 2**31
                    sent_at=sent_at,
                )
            )
    assert reconcile_once(use_settings) == 4
    assert reconcile_once(use_settings) == 0  # touched: not stale again yet
    sent = sorted(folder.glob("*.msg"), key=lambda path: path.stat().st_mtime_ns)[sent_by_api:]
    tasks = [json.loads(path.read_text())["headers"] for path in sent]
    assert sorted(t["task"] for t in tasks) == sorted(
        ["repairbot.process_delivery", "repairbot.triage", "repairbot.repair", APPLY_FIX]
    )
    [apply_fix] = [t for t in tasks if t["task"] == APPLY_FIX]
    assert apply_fix["argsrepr"].endswith(", 4000000001)")


def test_repair_in_process_then_read_api_and_metrics(use_settings, tmp_path):
    from bot.cli.demo_target import run_tests
    from bot.pipeline.repair.task import repair
    from bot.pipeline.triage import triage

    repo = tmp_path / "target"
    head = build_target(repo)
    console = run_tests(repo).console
    report_id = _post(
        use_settings, console, f"?repository={repo}&head_sha={head}&pipeline=p&build_number=3"
    )
    triage.run(report_id)
    with session_scope(use_settings.resolved_database_url) as session:
        run_id = session.scalars(select(RepairRun.id).where(RepairRun.report_id == report_id)).one()
    repair.run(run_id)
    repair.run(run_id)  # a redelivered task changes nothing
    with TestClient(create_app(use_settings)) as client:
        report = client.get(f"/api/v1/reports/{report_id}").json()
        assert [t["to"] for t in report["runs"][0]["transitions"]] == [
            "classified",
            "swept",
            "patched",
            "pr_opened",
        ]
        fixes = client.get("/api/v1/fixes").json()
        assert len(fixes) == 1 and fixes[0]["state"] == "open"
        detail = client.get(f"/api/v1/fixes/{fixes[0]['id']}").json()
        assert "def _forward_impl" in detail["diff"]
        assert "## Description" in detail["body"] and "## Test Coverage" in detail["body"]
        assert client.get("/api/v1/fixes/999").status_code == 404
        assert client.get("/api/v1/failures").json()[0]["id"] == report_id
        assert client.get("/healthz").json() == {"status": "ok", "version": __version__}
        assert client.get("/readyz").json()["schema"] == _head_revision()
        metrics = client.get("/metrics").text
        assert 'repairbot_runs{state="pr_opened"} 1.0' in metrics
        assert (
            'repairbot_deliveries{event="ci_failure",outcome="stored",source="ci"} 1.0' in metrics
        )
        assert 'repairbot_state_reached_seconds_avg{state="pr_opened"}' in metrics


def test_a_violation_already_fixed_on_the_base_branch_opens_no_pr(use_settings, tmp_path):
    from bot.cli.demo_target import run_tests
    from bot.git import commit_all
    from bot.pipeline.repair.task import repair
    from bot.pipeline.triage import triage
    from fixers.contracts.model import SPEC_WORKER_CONTRACT
    from fixers.sweep.run import fix, write_changes

    repo = tmp_path / "target"
    failing = build_target(repo)
    console = run_tests(repo).console
    write_changes(repo, fix(repo, [SPEC_WORKER_CONTRACT], imports=False))
    commit_all(repo, "Move the workers to _forward_impl")
    report_id = _post(
        use_settings,
        console,
        f"?repository={repo}&head_sha={failing}&base_ref=main&pipeline=p&build_number=4",
    )
    triage.run(report_id)
    with session_scope(use_settings.resolved_database_url) as session:
        run_id = session.scalars(select(RepairRun.id).where(RepairRun.report_id == report_id)).one()
    repair.run(run_id)
    with session_scope(use_settings.resolved_database_url) as session:
        run = session.get_one(RepairRun, run_id)
        assert run.state == "no_fix_needed" and run.fix_id is None
        assert (
            "already fixed on main" in run.reason
            and "Move the workers to _forward_impl" in run.reason
        )
