"""The event loop guard on real git repositories and databases (SQLite and PostgreSQL): a CI
failure on a commit a bot pushed, or on our own fix PR, is acted on within the budget and the
run ends ``loop_guarded`` past it, before any worktree is made; a human's failure is never
counted; a report naming a PR that does not exist, or a sha that is not there, is handled
clearly; a bot's push onto a human's PR is budgeted the same way."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from bot.app import create_app
from bot.cli.demo_target import build_target
from bot.db.models import Fix, RepairRun, RunState
from bot.db.records.bot_events import BotEvent
from bot.db.records.contract_checks import start_check
from bot.db.session import session_scope
from bot.forges.github.events import PullRequestEvent
from bot.forges.local.forge import LocalForge
from bot.git import GitError, git, resolve_commit
from bot.pipeline.memory.loop_guard import guard_pull_request, guard_report
from bot.pipeline.repair.target import Target
from tests.bot.pipeline.contract_check.test_triggers import REPO as SPEC_REPO
from tests.bot.pipeline.contract_check.test_triggers import _checks_sent, _open, spec_repo
from tests.conftest import CI_TOKEN
from tests.fakes.github_deliveries import deliver_and_process

__all__ = ["spec_repo"]  # the fixture, shared with the contract trigger tests

LOGS = Path(__file__).parents[3] / "fixtures" / "logs"
CONSOLE = (LOGS / "py312" / "contract_override.console.txt").read_bytes()
CODEGEN = {"GIT_AUTHOR_NAME": "codegen[bot]", "GIT_AUTHOR_EMAIL": "codegen[bot]@example.com"}
HUMAN = {"GIT_AUTHOR_NAME": "Alice", "GIT_AUTHOR_EMAIL": "alice@example.com"}


@pytest.fixture
def use_settings(settings, task_settings):
    """This test's settings (a budget of 2), given to the tasks it runs."""
    return task_settings(settings.model_copy(update={"bot_event_budget_per_pr_hour": 2}))


def _commit_as(repo: Path, who: dict[str, str], name: str) -> str:
    (repo / f"{name}.txt").write_text(name)
    git(repo, "add", "--all")
    # Not bot.git.git: it commits as the bot itself; the committer stays the author here.
    committer = {"GIT_COMMITTER_NAME": who["GIT_AUTHOR_NAME"]}
    committer["GIT_COMMITTER_EMAIL"] = who["GIT_AUTHOR_EMAIL"]
    subprocess.run(
        ["git", "-C", str(repo), "commit", "--quiet", "-m", name],
        env={**os.environ, **who, **committer},
        check=True,
    )
    return resolve_commit(repo, "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "target"
    build_target(path)
    return path


def _run_for(settings, repo: Path, head: str, build: int, pr: int | None = None) -> int:
    from bot.pipeline.triage import triage

    query = f"?repository={repo}&head_sha={head}&pipeline=L0&build_number={build}"
    query += f"&pr_number={pr}" if pr is not None else ""
    with TestClient(create_app(settings)) as client:
        response = client.post(
            f"/api/v1/ci-failures{query}",
            content=CONSOLE,
            headers={"Authorization": f"Bearer {CI_TOKEN}"},
        )
    assert response.status_code == 202, response.text
    triage.run(int(response.json()["report_id"]))
    with session_scope(settings.resolved_database_url) as session:
        report_id = int(response.json()["report_id"])
        return session.scalars(select(RepairRun.id).where(RepairRun.report_id == report_id)).one()


def _target(settings, repo: Path, sha: str) -> Target:
    return Target(LocalForge(settings), str(repo), repo, sha, "main")


def _events(settings) -> list[tuple[int, str, str, int | None]]:
    with session_scope(settings.resolved_database_url) as session:
        rows = session.scalars(select(BotEvent).order_by(BotEvent.id))
        return [(r.pr_number, r.kind, r.outcome, r.slot) for r in rows]


def _state(settings, run_id: int) -> tuple[str, str]:
    with session_scope(settings.resolved_database_url) as session:
        run = session.get_one(RepairRun, run_id)
        return run.state, run.reason


def test_a_bots_failing_commit_is_acted_on_within_the_budget_then_guarded(use_settings, repo):
    from bot.pipeline.repair.task import repair

    head = _commit_as(repo, CODEGEN, "regenerated")
    for build in (1, 2):  # within the budget: the run may go on (a repair would follow)
        run_id = _run_for(use_settings, repo, head, build, pr=7)
        assert guard_report(use_settings, run_id, _target(use_settings, repo, head)) is None
        # A rerun of the same run's task counts nothing more and gets the same answer.
        assert guard_report(use_settings, run_id, _target(use_settings, repo, head)) is None
    assert _events(use_settings) == [(7, "ci_failure", "acted", 1), (7, "ci_failure", "acted", 2)]

    third = _run_for(use_settings, repo, head, 3, pr=7)
    repair.run(third)  # the real stage: ends before any worktree or sweep
    state, reason = _state(use_settings, third)
    assert state == RunState.LOOP_GUARDED.value, reason
    assert "caused by codegen[bot]" in reason and f"#{7}" in reason and head[:12] in reason
    assert _events(use_settings)[-1] == (7, "ci_failure", "guarded", None)
    assert not list((use_settings.worktrees_dir).glob("run-*"))


def test_a_failure_on_our_own_fix_pr_counts_against_it(use_settings, repo):
    head = resolve_commit(repo, "HEAD")  # committed with bot.git's identity: not evidence
    with session_scope(use_settings.resolved_database_url) as session:
        fix = Fix(
            forge="local", repository=str(repo), number=12, dedupe_key="k", signature="s",
            base_sha=head, branch="repairbot/fix", head_sha="f" * 40, title="t", body="b",
            diff="",
        )  # fmt: skip
        session.add(fix)
    run_id = _run_for(use_settings, repo, head, 1, pr=12)
    assert guard_report(use_settings, run_id, _target(use_settings, repo, head)) is None
    assert _events(use_settings) == [(12, "ci_failure", "acted", 1)]
    with session_scope(use_settings.resolved_database_url) as session:
        [row] = session.scalars(select(BotEvent))
        assert row.caused_by.startswith("repairbot[bot] (its fix #") and "PR #12" in row.caused_by


def test_human_failures_and_unknown_prs_are_never_counted(use_settings, repo):
    head = _commit_as(repo, HUMAN, "by-alice")
    for build, pr in ((1, None), (2, 4242), (3, 4242), (4, 4242)):  # 4242: no such PR anywhere
        run_id = _run_for(use_settings, repo, head, build, pr=pr)
        assert guard_report(use_settings, run_id, _target(use_settings, repo, head)) is None
    # The demo target's own commits carry bot.git's identity: still a human's failure here.
    first = resolve_commit(repo, "HEAD~1")
    run_id = _run_for(use_settings, repo, first, 5)
    assert guard_report(use_settings, run_id, _target(use_settings, repo, first)) is None
    assert _events(use_settings) == []


def test_an_unknown_sha_ends_the_run_in_error_and_counts_nothing(use_settings, repo):
    from bot.pipeline.repair.task import repair

    run_id = _run_for(use_settings, repo, "abc123" * 6 + "abcd", 1, pr=7)
    repair.run(run_id)
    state, reason = _state(use_settings, run_id)
    assert state == RunState.ERROR.value and "abc123" in reason, reason
    assert _events(use_settings) == []
    with pytest.raises(GitError, match="dead"):
        guard_report(use_settings, run_id, _target(use_settings, repo, "dead" * 10))


def _pushed(sender: str, head: str, action: str = "synchronize") -> PullRequestEvent:
    return PullRequestEvent(
        action=action, repository="acme/trt", number=3, url="u", merged=False,
        head_ref="alice/feature", head_sha=head, base_ref="main", merge_commit_sha=None,
        author="alice", sender=sender,
    )  # fmt: skip


def test_a_bots_push_onto_a_humans_pr_is_budgeted(use_settings):
    url = use_settings.resolved_database_url
    with session_scope(url) as session:
        assert guard_pull_request(session, use_settings, _pushed("alice", "a" * 40)) is None
        for head in ("b", "c"):
            event = _pushed("pre-commit-ci[bot]", head * 40)
            assert guard_pull_request(session, use_settings, event) is None
        # A redelivery of an acted-on event is acted on again (its own row, its first answer).
        again = _pushed("pre-commit-ci[bot]", "b" * 40)
        assert guard_pull_request(session, use_settings, again) is None
        past = guard_pull_request(session, use_settings, _pushed("repairbot[bot]", "d" * 40))
    assert past is not None and "caused by repairbot[bot]" in past and "acme/trt#3" in past
    assert [e[2] for e in _events(use_settings)] == ["acted", "acted", "guarded"]


def test_bot_pushes_onto_a_humans_pr_queue_checks_only_within_the_budget(
    gh_settings, task_settings, github_api, spec_repo
):
    settings = task_settings(gh_settings.model_copy(update={"bot_event_budget_per_pr_hour": 2}))
    number = _open(github_api, spec_repo, "work")
    notes = []
    for i, sender in enumerate(["pre-commit-ci[bot]", "alice", "pre-commit-ci[bot]"] * 2):
        payload = github_api.pull_request_event(SPEC_REPO, number, "synchronize")
        payload["pull_request"]["head"]["sha"] = f"{i:040x}"  # a new push each time
        payload["sender"]["login"] = sender
        notes.append(deliver_and_process(settings, "pull_request", payload, f"sync-{i}")[1])
        with session_scope(settings.resolved_database_url) as session:  # the worker takes it
            start_check(session, repository=SPEC_REPO, number=number)
    # Every human push is checked; the bot's only while its PR has budget (2 of 4).
    assert len(_checks_sent(settings)) == 2 + 2
    said = [note for delivery in notes for note in delivery]
    guarded = [n for n in said if n.startswith("contract-check: loop guard")]
    assert len(guarded) == 2 and all("caused by pre-commit-ci[bot]" in g for g in guarded)
    assert [e[2] for e in _events(settings)] == ["acted", "acted", "guarded", "guarded"]
