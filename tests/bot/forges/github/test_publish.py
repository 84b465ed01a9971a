"""Dedupe against GitHub and push-to-existing, through the real triage and repair tasks
(run in-process with ``apply``) against the fake GitHub."""

from __future__ import annotations

import subprocess

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from bot.app import create_app
from bot.cli.demo_target import run_tests
from bot.db.models import Fix, RepairRun
from bot.db.session import session_scope
from bot.git import commit_all, fresh_worktree, git
from bot.pipeline.repair.task import repair
from bot.pipeline.triage import triage
from fixers.sweep.run import fix, write_changes
from tests.bot.conftest import REPO
from tests.conftest import CI_TOKEN
from tests.fakes.github_deliveries import send_pending_writes

LATE = '''"""A worker that landed after the contract, written the old way."""

from __future__ import annotations

from .ngram import NGramWorker


class LateWorker(NGramWorker):
    """Overrides forward again."""

    def forward(self, *args, **kwargs):
        return NGramWorker._forward_impl(self, *args, **kwargs)
'''


@pytest.fixture
def tasks_use(gh_settings, task_settings):
    """The fake GitHub's settings, given to the tasks the test runs."""
    return task_settings(gh_settings)


def _repair(settings, console: bytes, head: str, build: int) -> RepairRun:
    params = {
        "pipeline": "L0",
        "build_number": build,
        "repository": REPO,
        "head_sha": head,
        "base_ref": "main",
        "stage": "H100_PCIe-PyTorch-1",
    }
    with TestClient(create_app(settings)) as client:
        answer = client.post(
            "/api/v1/ci-failures",
            params=params,
            content=console,
            headers={"Authorization": f"Bearer {CI_TOKEN}"},
        ).json()
    triage.apply(args=[answer["report_id"]]).get()
    with session_scope(settings.resolved_database_url) as session:
        [run_id] = session.scalars(
            select(RepairRun.id).where(RepairRun.report_id == answer["report_id"])
        ).all()
    repair.apply(args=[run_id]).get()
    with session_scope(settings.resolved_database_url) as session:
        run = session.get_one(RepairRun, run_id)
        session.expunge(run)
        return run


def _clone(github_api, tmp_path, name):
    path = tmp_path / name
    subprocess.run(
        ["git", "clone", "--quiet", str(github_api.repos[REPO].path), str(path)], check=True
    )
    return path


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
def test_an_open_human_pr_with_the_same_fix_is_linked_and_nothing_opened(
    tasks_use, github_api, target, tmp_path
):
    _repo, head = target
    console = run_tests(_clone(github_api, tmp_path, "ci")).console
    human = _clone(github_api, tmp_path, "human")
    write_changes(human, fix(human, None, imports=False))
    commit_all(human, "Fix the workers")
    git(human, "push", "--quiet", "origin", "HEAD:refs/heads/alice/fix")
    number = github_api.open_pull(REPO, head="alice/fix", title="[None][fix] workers")

    run = _repair(tasks_use, console, head, 1)
    assert run.state == "duplicate", run.reason
    assert run.linked_url == f"https://github.com/{REPO}/pull/{number}"
    assert f"#{number} by alice" in run.reason
    assert [p["number"] for p in github_api.pulls(REPO)] == [number]


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
def test_new_violations_of_the_same_contract_are_pushed_to_the_open_pr(
    tasks_use, github_api, target, tmp_path
):
    _repo, head = target
    console = run_tests(_clone(github_api, tmp_path, "ci")).console
    first = _repair(tasks_use, console, head, 1)
    assert first.state == "pr_opened", first.reason
    [pull] = github_api.pulls(REPO)

    # A new worker written the old way lands on main while our PR is open.
    dev = _clone(github_api, tmp_path, "dev")
    (dev / "legacy_spec" / "late.py").write_text(LATE)
    new_head = commit_all(dev, "Add LateWorker")
    git(dev, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    second = _repair(tasks_use, run_tests(dev).console, new_head, 2)

    assert second.state == "pr_opened" and second.fix_id == first.fix_id, second.reason
    assert "pushed" in second.reason
    assert len(github_api.pulls(REPO)) == 1
    pr_head = github_api.repos[REPO].refresh(pull["number"])["head"]["sha"]
    assert pr_head != pull["head"]["sha"]
    checkout = fresh_worktree(github_api.repos[REPO].path, tmp_path / "after", pr_head)
    assert "def _forward_impl" in (checkout / "legacy_spec" / "late.py").read_text()
    assert run_tests(checkout).returncode == 0
    send_pending_writes(tasks_use)  # the comment it deferred, as the worker sends it
    comments = [c["body"] for c in github_api.repos[REPO].comments[pull["number"]]]
    assert any("New violations of the same contract" in c for c in comments)
    with session_scope(tasks_use.resolved_database_url) as session:
        row = session.get_one(Fix, first.fix_id)
        assert row.head_sha == pr_head
        assert row.bot_head_sha == pr_head  # the extension is the bot's push too
        assert any("LateWorker" in key for key in row.violation_keys)
