"""The local forge publishes and says what it did; the pipeline records it (``run_state``).

The forge writes only its ``fixes`` row (and the run's link to the row it created, so that a
killed attempt resumes its own fix); the run's states and the verification are the pipeline's.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.cli.demo_target import build_target
from bot.db.models import CiFailure, Delivery, Fix, RepairRun, RunState, Verification
from bot.db.session import session_scope
from bot.forges.base import Candidate, Linked, Opened
from bot.forges.local.forge import LocalForge
from bot.forges.pr_text import PullRequestText
from bot.git import fresh_worktree, git, resolve_commit
from bot.pipeline.repair.run_state import record_publication
from fixers.contracts.model import SPEC_WORKER_CONTRACT

TEXT = PullRequestText(title="[None][fix] t", body="b", commit_message="Fix it")


def _run(settings, state: RunState = RunState.PATCHED) -> int:
    with session_scope(settings.resolved_database_url) as session:
        delivery = Delivery(source="ci", key=uuid.uuid4().hex, event="e", action=None, body=b"")
        session.add(delivery)
        session.flush()
        report = CiFailure(delivery_id=delivery.id, format="console")
        session.add(report)
        session.flush()
        run = RepairRun(
            report_id=report.id, root_cause=f"r-{report.id}", signature="s", state=state
        )
        session.add(run)
        session.flush()
        return run.id


def _candidate(repo: Path, worktree: Path, run_id: int, own_fix: int | None = None) -> Candidate:
    head = resolve_commit(repo, "HEAD")
    if not worktree.exists():
        fresh_worktree(repo, worktree, head)
        (worktree / "CHANGED.txt").write_text("fixed\n")
    return Candidate(
        run_id=run_id,
        own_fix=own_fix,
        repository=str(repo),
        repo=repo,
        worktree=worktree,
        base_sha=head,
        base_ref="main",
        key="same-violations",
        contract_key="same-contract",
        contract=SPEC_WORKER_CONTRACT,
        signature="contract-forward-override",
        branch="repairbot/contract-forward-override/same-viol",
        violation_keys=["forbidden-override:W:w.py"],
        violations=["w.py:1 `W` (forbidden-override)"],
        files=["CHANGED.txt"],
        text=TEXT,
        trusted_tip=head,
        codemods=("rename_forbidden",),
    )


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "target"
    build_target(path)
    return path


def _state(settings, run_id: int) -> tuple[str, int | None, str | None]:
    with session_scope(settings.resolved_database_url) as session:
        run = session.get_one(RepairRun, run_id)
        return run.state, run.fix_id, run.linked_url


def test_open_then_link_then_resume(settings, repo, tmp_path):
    forge = LocalForge(settings)
    first = _run(settings)
    opened = forge.publish(_candidate(repo, tmp_path / "wt1", first))
    assert isinstance(opened, Opened) and opened.reason.startswith(f"fix #{opened.fix_id} on ")
    # The forge linked its new row to the run, and left the run's state alone.
    assert _state(settings, first) == ("patched", opened.fix_id, None)
    assert "CHANGED.txt" in git(
        repo, "show", "--stat", "repairbot/contract-forward-override/same-viol"
    )

    second = _run(settings)
    linked = forge.publish(_candidate(repo, tmp_path / "wt2", second))
    assert linked == Linked(opened.fix_id, None, f"fix #{opened.fix_id} already covers it")

    # The first run was killed before it recorded the outcome: its next attempt resumes.
    again = forge.publish(_candidate(repo, tmp_path / "wt3", first, own_fix=opened.fix_id))
    assert again == opened
    with session_scope(settings.resolved_database_url) as session:
        [row] = session.scalars(select(Fix)).all()
        # What the quality figures count: the codemods applied, the head the bot pushed.
        assert row.codemods == ["rename_forbidden"]
        assert row.bot_head_sha == row.head_sha == resolve_commit(repo, row.branch)


def test_the_pipeline_records_each_outcome(settings, repo, tmp_path):
    forge = LocalForge(settings)
    first = _run(settings)
    opened = forge.publish(_candidate(repo, tmp_path / "wt1", first))
    record_publication(settings, first, opened)
    assert _state(settings, first) == ("pr_opened", opened.fix_id, None)
    with session_scope(settings.resolved_database_url) as session:
        [verification] = session.scalars(select(Verification)).all()
        assert (verification.fix_id, verification.state) == (opened.fix_id, "queued")
        assert verification.requested_by == "repairbot (automatic)"

    second = _run(settings)
    record_publication(settings, second, Linked(None, "https://example/pull/3", "PR #3 fixes it"))
    assert _state(settings, second) == ("duplicate", None, "https://example/pull/3")

    # A run a duplicate delivery already finished is left as it is.
    finished = _run(settings, RunState.NO_FIX_NEEDED)
    record_publication(settings, finished, opened)
    assert _state(settings, finished) == ("no_fix_needed", None, None)
    with session_scope(settings.resolved_database_url) as session:
        assert len(session.scalars(select(Verification)).all()) == 1
