"""A learned migration through the service: triage plans one run per contract break, the repair
learns the rule from the repository's history and opens one PR that says what it learned."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select

from bot.app import create_app
from bot.db.models import CiFailure, RepairRun
from bot.db.session import session_scope
from tests.conftest import CI_TOKEN
from tests.fixers.git_repos import git
from tests.fixers.learned import history_repos as repos

LINE = (
    "TypeError: Can't instantiate abstract class RailCarrier without an implementation for "
    "abstract method 'ship'"
)


def test_a_learned_migration_opens_one_pr_naming_its_contract_commit(
    settings, task_settings, tmp_path
):
    from bot.pipeline.repair.task import repair
    from bot.pipeline.triage import triage

    use_settings = task_settings(settings)
    repo = repos.shipping_repo(tmp_path / "shipping")
    head = git(repo, "rev-parse", "HEAD").strip()
    log = repos.failure_log(tmp_path / "failure.log", LINE).read_bytes()
    with TestClient(create_app(use_settings)) as client:
        answer = client.post(
            f"/api/v1/ci-failures?repository={repo}&head_sha={head}&base_ref=main"
            "&pipeline=p&build_number=7",
            content=log,
            headers={"Authorization": f"Bearer {CI_TOKEN}"},
        )
    assert answer.status_code == 202, answer.text
    report_id = int(answer.json()["report_id"])
    triage.run(report_id)
    with session_scope(use_settings.resolved_database_url) as session:
        report = session.get_one(CiFailure, report_id)
        [run] = report.runs
        assert (run.signature, run.state) == ("abstract-class-instantiation", "classified")
        assert run.contract["source"] == "learned" and run.contract["base"] == "RailCarrier"
        run_id = run.id
    repair.run(run_id)
    repair.run(run_id)  # a redelivered task changes nothing
    with session_scope(use_settings.resolved_database_url) as session:
        run = session.scalars(select(RepairRun).where(RepairRun.id == run_id)).one()
        assert run.state == "pr_opened", run.reason
    with TestClient(create_app(use_settings)) as client:
        [fix] = client.get("/api/v1/fixes").json()
        detail = client.get(f"/api/v1/fixes/{fix['id']}").json()
    assert "+    def ship(self, parcel, *, priority=0):" in detail["diff"]
    assert "shipping/rail.py" in detail["diff"] and "tests/test_shipping.py" in detail["diff"]
    assert "courier.py" not in detail["diff"]
    body = detail["body"]
    assert "`Carrier.dispatch becomes ship with a priority`" in body
    assert "rename dispatch -> ship, add *, priority=0" in body
