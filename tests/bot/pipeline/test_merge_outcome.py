"""How our merged fix landed, on a real merge: the bot opens its PR through the real triage and
repair tasks on the GitHub double, a human pushes an edit (or nobody does), a maintainer clicks
"Update branch" (or does not), the PR merges (or is squashed), and the ``pull_request``
deliveries are processed as the worker would: the fix is merged after human edits, with the
humans' diff read from the real repository mirror, or merged unchanged."""

from __future__ import annotations

import subprocess

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from bot.app import create_app
from bot.cli.demo_target import run_tests
from bot.db.models import Fix, RepairRun
from bot.db.session import session_scope
from bot.git import commit_all, git
from bot.pipeline.merge_outcome import MAX_EDIT_DIFF_CHARS, capped, settle_edits
from bot.pipeline.repair.task import repair
from bot.pipeline.triage import triage
from bot.queue import names as task_names
from tests.bot.conftest import REPO
from tests.bot.intake.broker import sent_tasks
from tests.conftest import CI_TOKEN
from tests.fakes.github_deliveries import deliver_and_process

HUMAN_LINE = "# Reviewed: the hook keeps the decorator (added by a maintainer)."


@pytest.fixture
def tasks_use(gh_settings, task_settings):
    """The fake GitHub's settings, given to the tasks the test runs."""
    return task_settings(gh_settings)


def _open_fix(settings, github_api, tmp_path, head: str) -> Fix:
    """A failing CI run of the target → triage → repair: the bot pushes its branch, opens a PR."""
    ci = tmp_path / "ci"
    subprocess.run(
        ["git", "clone", "--quiet", str(github_api.repos[REPO].path), str(ci)], check=True
    )
    params = {"pipeline": "L0", "build_number": 1, "repository": REPO, "head_sha": head,
              "base_ref": "main", "stage": "H100_PCIe-PyTorch-1"}  # fmt: skip
    with TestClient(create_app(settings)) as client:
        answer = client.post(
            "/api/v1/ci-failures",
            params=params,
            content=run_tests(ci).console,
            headers={"Authorization": f"Bearer {CI_TOKEN}"},
        ).json()
    triage.apply(args=[answer["report_id"]]).get()
    with session_scope(settings.resolved_database_url) as session:
        run_id = session.scalars(
            select(RepairRun.id).where(RepairRun.report_id == answer["report_id"])
        ).one()
    repair.apply(args=[run_id]).get()
    with session_scope(settings.resolved_database_url) as session:
        run = session.get_one(RepairRun, run_id)
        assert run.state == "pr_opened", run.reason
        fix = session.get_one(Fix, run.fix_id)
        session.expunge(fix)
        return fix


def _human_edit(github_api, tmp_path, fix: Fix) -> str:
    """A maintainer checks out our branch, edits the file the bot fixed, and pushes."""
    checkout, bot = tmp_path / "human", str(fix.bot_head_sha)
    source = str(github_api.repos[REPO].path)
    subprocess.run(
        ["git", "clone", "--quiet", "--branch", fix.branch, source, str(checkout)], check=True
    )
    changed = git(checkout, "diff", "--name-only", f"{bot}~1", bot).split()[0]
    path = checkout / changed
    path.write_text(path.read_text() + f"\n{HUMAN_LINE}\n")
    head = commit_all(checkout, "Review: a note on the hook")
    git(checkout, "push", "--quiet", "origin", f"HEAD:refs/heads/{fix.branch}")
    return head


def _base_moves(github_api, tmp_path, n: int) -> None:
    """Another PR lands on the base: a new file on ``main``."""
    checkout = tmp_path / f"base-{n}"
    subprocess.run(
        ["git", "clone", "--quiet", str(github_api.repos[REPO].path), str(checkout)], check=True
    )
    (checkout / f"BASE_{n}.md").write_text(f"Landed on main while the fix was open ({n}).\n")
    commit_all(checkout, f"Another change {n}")
    git(checkout, "push", "--quiet", "origin", "HEAD:refs/heads/main")


def _update_branch(settings, github_api, fix: Fix) -> str:
    """A maintainer clicks "Update branch" (the base merged into our branch); GitHub sends a
    ``synchronize``, processed as the worker would."""
    assert fix.number is not None
    with github_api.lock:
        merge = github_api.repos[REPO].update_branch(fix.number)
    pushed = github_api.pull_request_event(REPO, fix.number, "synchronize")
    deliver_and_process(settings, "pull_request", pushed, f"update-{merge[:12]}")
    return merge


def _merge(settings, github_api, fix: Fix, *, squash: bool = False) -> str:
    """Deliver the merge; then run the task it queued (if any), as a worker would."""
    assert fix.number is not None
    with github_api.lock:
        github_api.repos[REPO].merge(fix.number, "maintainer", squash=squash)
    payload = github_api.pull_request_event(REPO, fix.number, "closed")
    _, notes = deliver_and_process(settings, "pull_request", payload, f"merge-{fix.number}")
    queued = [args for name, args in sent_tasks(settings) if name == task_names.MERGE_OUTCOME]
    # Read after the delivery committed, outside its transaction (SQLite's write lock).
    assert _reload(settings, fix.id).merged_with_edits is None or not queued
    return str(notes + [settle_edits(settings, *args) for args in queued])


def _reload(settings, fix_id: int) -> Fix:
    with session_scope(settings.resolved_database_url) as session:
        row = session.get_one(Fix, fix_id)
        session.expunge(row)
        return row


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
def test_a_human_edit_before_the_merge_is_recorded_with_its_diff(
    tasks_use, github_api, target, tmp_path
):
    _repo, head = target
    fix = _open_fix(tasks_use, github_api, tmp_path, head)
    assert fix.bot_head_sha == fix.head_sha and fix.bot_head_sha is not None
    assert fix.codemods and "rename_forbidden" in fix.codemods, fix.codemods

    edited = _human_edit(github_api, tmp_path, fix)
    assert fix.number is not None
    pushed = github_api.pull_request_event(REPO, fix.number, "synchronize")
    deliver_and_process(tasks_use, "pull_request", pushed, "human-push")
    after_push = _reload(tasks_use, fix.id)
    assert after_push.head_sha == edited and after_push.bot_head_sha == fix.bot_head_sha

    notes = _merge(tasks_use, github_api, fix)
    row = _reload(tasks_use, fix.id)
    assert row.state == "merged" and row.merged_head_sha == edited, notes
    assert row.merged_with_edits is True
    assert row.human_edit_diff is not None and row.human_edit_diff.startswith("diff --git ")
    lines = row.human_edit_diff.splitlines()
    changed = [s for s in lines if s[:1] in "+-" and not s.startswith(("+++", "---"))]
    assert changed == ["+", f"+{HUMAN_LINE}"], changed  # the human's lines only, not the bot's

    # A redelivered merge changes nothing (the merged head is kept once).
    payload = github_api.pull_request_event(REPO, fix.number, "closed")
    deliver_and_process(tasks_use, "pull_request", payload, "merge-again")
    assert _reload(tasks_use, fix.id).human_edit_diff == row.human_edit_diff


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
def test_a_fix_merged_as_the_bot_pushed_it_is_unchanged(tasks_use, github_api, target, tmp_path):
    _repo, head = target
    fix = _open_fix(tasks_use, github_api, tmp_path, head)
    notes = _merge(tasks_use, github_api, fix)
    row = _reload(tasks_use, fix.id)
    assert (row.state, row.merged_with_edits, row.human_edit_diff) == ("merged", False, None)
    assert row.merged_head_sha == fix.bot_head_sha and "merged unchanged" in notes, notes


@pytest.mark.parametrize("squash", [False, True], ids=["merge", "squash"])
@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
def test_update_branch_merges_are_not_human_edits(tasks_use, github_api, target, tmp_path, squash):
    """Issue 30: "Update branch" (twice, the base moving in between) brings the base's changes
    into our branch and nothing else: the fix landed unchanged, merged or squashed."""
    _repo, head = target
    fix = _open_fix(tasks_use, github_api, tmp_path, head)
    _base_moves(github_api, tmp_path, 1)
    _update_branch(tasks_use, github_api, fix)
    _base_moves(github_api, tmp_path, 2)
    updated = _update_branch(tasks_use, github_api, fix)
    assert _reload(tasks_use, fix.id).head_sha == updated != fix.bot_head_sha

    notes = _merge(tasks_use, github_api, fix, squash=squash)
    row = _reload(tasks_use, fix.id)
    assert row.state == "merged" and row.merged_head_sha == updated, notes
    assert (row.merged_with_edits, row.human_edit_diff) == (False, None), row.human_edit_diff
    assert "merged unchanged" in notes, notes


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
def test_update_branch_and_a_human_edit_show_only_the_human_lines(
    tasks_use, github_api, target, tmp_path
):
    _repo, head = target
    fix = _open_fix(tasks_use, github_api, tmp_path, head)
    _base_moves(github_api, tmp_path, 1)
    _update_branch(tasks_use, github_api, fix)
    _human_edit(github_api, tmp_path, fix)
    _base_moves(github_api, tmp_path, 2)
    _update_branch(tasks_use, github_api, fix)

    notes = _merge(tasks_use, github_api, fix)
    row = _reload(tasks_use, fix.id)
    assert row.merged_with_edits is True and row.human_edit_diff is not None, notes
    lines = row.human_edit_diff.splitlines()
    changed = [s for s in lines if s[:1] in "+-" and not s.startswith(("+++", "---"))]
    assert changed == ["+", f"+{HUMAN_LINE}"], changed  # nothing of BASE_1.md, BASE_2.md
    assert "BASE_" not in row.human_edit_diff


def test_a_long_diff_is_capped_with_a_note():
    text = "+x\n" * MAX_EDIT_DIFF_CHARS
    kept = capped(text)
    assert kept.startswith(text[:MAX_EDIT_DIFF_CHARS]) and len(kept) < len(text)
    assert f"the edits' diff is {len(text)} characters" in kept
    assert capped("+short\n") == "+short\n"
