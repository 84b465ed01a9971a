"""Fan-out notices against the real database (SQLite and PostgreSQL) and the GitHub double: one
comment per affected PR, edited only when its text changes, a missing PR recorded as failed, and
the re-run command posted once, only where the base branch configures it and the PR is open."""

from __future__ import annotations

import subprocess
from datetime import timedelta

from sqlalchemy import func, select

from bot.db.models import CiFailure, Delivery, Fix, FixState, RepairRun
from bot.db.records.pr_notices import PrNotice
from bot.db.rows import contract_to_row
from bot.db.session import session_scope
from bot.git import commit_all, git
from bot.pipeline.fan_out.task import (
    queue_refresh,
    record_notice,
    refresh_notices,
    resend_pending,
    sync_and_rerun,
    sync_notice,
)
from bot.queue.names import PR_NOTICE, PR_NOTICES_REFRESH
from fixers.contracts.model import SPEC_WORKER_CONTRACT
from tests.bot.conftest import REPO
from tests.bot.intake.broker import sent_tasks
from tests.fakes.github_git import git_out


def _human_pull(github_api, repo, head: str, branch: str) -> int:
    git_out(repo.path, "update-ref", f"refs/heads/{branch}", head)
    return github_api.open_pull(REPO, head=branch, title=f"[None][feat] {branch}")


def _fix(session, head: str, *, forge: str = "github") -> Fix:
    delivery = Delivery(source="ci", key=f"d-{forge}", event="ci_failure", body=b"log")
    session.add(delivery)
    session.flush()
    report = CiFailure(delivery_id=delivery.id, format="console", repository=REPO)
    session.add(report)
    session.flush()
    fix = Fix(
        forge=forge,
        repository=REPO,
        number=7,
        url=f"https://github.com/{REPO}/pull/7",
        dedupe_key=f"key-{forge}",
        signature="spec-worker-forward",
        base_ref="main",
        base_sha=head,
        branch="repairbot/x",
        head_sha=head,
        title="t",
        body="b",
        diff="",
        violation_keys=["a", "b"],
    )
    session.add(fix)
    session.flush()
    session.add(
        RepairRun(
            report_id=report.id,
            root_cause="spec-worker",
            signature="spec-worker-forward",
            contract=contract_to_row(SPEC_WORKER_CONTRACT),
            fix_id=fix.id,
        )
    )
    return fix


def _notice(settings, head: str, pr_number: int, failed_head: str | None = None) -> int:
    with session_scope(settings.resolved_database_url) as session:
        fix = session.scalar(select(Fix).where(Fix.forge == "github")) or _fix(session, head)
        notice = record_notice(session, pr_number=pr_number, fix=fix, failed_head=failed_head)
        assert notice is not None
        session.flush()
        return notice.id


def _set_fix(settings, **values: str) -> int:
    with session_scope(settings.resolved_database_url) as session:
        fix = session.scalars(select(Fix)).one()
        for name, value in values.items():
            setattr(fix, name, value)
        return fix.id


def _row(settings, notice_id: int) -> PrNotice:
    with session_scope(settings.resolved_database_url) as session:
        row = session.get_one(PrNotice, notice_id)
        session.expunge(row)
        return row


def test_a_notice_is_posted_once_and_edited_only_when_its_text_changes(
    gh_settings, github_api, target
):
    repo, head = target
    number = _human_pull(github_api, repo, head, "alice/feature")
    first = _notice(gh_settings, head, number)
    assert _notice(gh_settings, head, number) == first  # a second failure finds the same row
    assert sync_notice(gh_settings, first) == "posted"
    [comment] = repo.comments[number]
    assert "comes from the base branch `main`" in comment["body"]
    assert f"#7 (https://github.com/{REPO}/pull/7)" in comment["body"]
    assert "`SpecWorkerBase` contract" in comment["body"] and "(2 violations" in comment["body"]
    assert "**Verification of the fix:** not requested" in comment["body"]

    assert sync_notice(gh_settings, first) == "nothing to write"
    _set_fix(gh_settings, state=FixState.MERGED.value, state_reason="merged on GitHub")
    assert sync_notice(gh_settings, first) == "edited"
    assert sync_notice(gh_settings, first) == "nothing to write"

    [comment] = repo.comments[number]  # edited in place: still one comment
    assert "**has been merged** into `main`" in comment["body"]
    assert "<!-- repairbot:" in comment["body"].split("fan-out-notice -->")[1]  # outbox marker
    assert len(github_api.calls_to("POST", rf"/issues/{number}/comments$")) == 1
    assert len(github_api.calls_to("PATCH", rf"/issues/comments/{comment['id']}$")) == 1
    row = _row(gh_settings, first)
    assert (row.state, row.comment_id, row.edits) == ("posted", str(comment["id"]), 1)


def test_a_pr_that_is_not_on_github_is_recorded_as_failed(gh_settings, github_api, target):
    _, head = target
    notice = _notice(gh_settings, head, 99999)
    reason = sync_notice(gh_settings, notice)
    assert reason == f"PR #99999 of {REPO} not found on GitHub (404): no notice posted"
    row = _row(gh_settings, notice)
    assert (row.state, row.reason, row.comment_id) == ("failed", reason, None)
    assert sync_notice(gh_settings, notice) == "nothing to write"  # not retried for ever
    with session_scope(gh_settings.resolved_database_url) as session:
        fix = session.scalars(select(Fix)).one()
        assert (fix.state, fix.number) == ("open", 7)  # nothing else touched


def test_the_local_forge_records_no_notice(settings, tmp_path):
    with session_scope(settings.resolved_database_url) as session:
        fix = _fix(session, "0" * 40, forge="local")
        assert record_notice(session, pr_number=3, fix=fix) is None
        assert session.scalar(select(func.count(PrNotice.id))) == 0


def test_our_own_fix_prs_pipeline_gets_no_notice(settings, tmp_path):
    with session_scope(settings.resolved_database_url) as session:
        fix = _fix(session, "0" * 40)
        assert record_notice(session, pr_number=fix.number, fix=fix) is None  # PR #7 is ours
        assert record_notice(session, pr_number=8, fix=fix) is not None  # someone else's
        assert session.scalar(select(PrNotice.pr_number)) == 8


def _configure_rerun(repo, tmp_path) -> None:
    checkout = tmp_path / "config"
    subprocess.run(["git", "clone", "--quiet", str(repo.path), str(checkout)], check=True)
    (checkout / ".repairbot.toml").write_text('[fan_out]\nrerun_command = "/bot run"\n')
    commit_all(checkout, "Let repairbot re-run PR pipelines")
    git(checkout, "push", "--quiet", "origin", "HEAD:refs/heads/main")


def test_the_rerun_command_goes_once_to_open_prs_where_the_base_configures_it(
    gh_settings, github_api, target, tmp_path
):
    repo, head = target
    open_pr = _human_pull(github_api, repo, head, "alice/open")
    closed_pr = _human_pull(github_api, repo, head, "bob/closed")
    notices = [_notice(gh_settings, head, n) for n in (open_pr, closed_pr)]
    assert [sync_notice(gh_settings, n) for n in notices] == ["posted", "posted"]
    repo.pulls[closed_pr]["state"] = "closed"
    fix_id = _set_fix(gh_settings, state=FixState.MERGED.value)

    # No [fan_out] in the base branch's .repairbot.toml: the notices say merged, nothing else.
    assert refresh_notices(gh_settings, fix_id) == [
        "edited",
        "edited",
        "no re-run command configured",
    ]
    _configure_rerun(repo, tmp_path)
    assert refresh_notices(gh_settings, fix_id)[2:] == [
        f"posted '/bot run' on PR #{open_pr}",
        f"PR #{closed_pr} is closed: no re-run",
    ]
    refresh_notices(gh_settings, fix_id)  # once: a second refresh posts nothing

    commands = [c for c in repo.comments[open_pr] if c["body"] == "/bot run"]
    assert len(commands) == 1 and len(repo.comments[open_pr]) == 2
    assert [c["body"] for c in repo.comments[closed_pr] if c["body"] == "/bot run"] == []
    assert _row(gh_settings, notices[0]).rerun_comment_id == str(commands[0]["id"])


def test_no_rerun_on_a_head_that_moved_since_it_failed_unless_a_writer_owns_it(
    gh_settings, github_api, target, tmp_path
):
    repo, head = target
    strangers = _human_pull(github_api, repo, head, "mallory/x")  # opened by "alice"
    writers = _human_pull(github_api, repo, head, "writer/x")
    repo.pulls[writers]["user"]["login"] = "wendy"
    repo.permissions["wendy"] = "write"
    notices = [_notice(gh_settings, head, n, failed_head="0" * 40) for n in (strangers, writers)]
    [sync_notice(gh_settings, n) for n in notices]
    fix_id = _set_fix(gh_settings, state=FixState.MERGED.value)
    _configure_rerun(repo, tmp_path)

    said = refresh_notices(gh_settings, fix_id)

    assert (
        f"PR #{strangers}: its head moved to {head[:12]} since it failed at 000000000000"
        in (said[-2])
    )
    assert said[-1] == f"posted '/bot run' on PR #{writers}"
    assert [c for c in repo.comments[strangers] if c["body"] == "/bot run"] == []
    held = _row(gh_settings, notices[0])
    assert held.rerun_held and held.rerun_comment_id is None
    assert sync_notice(gh_settings, notices[0]) == "edited"  # the notice says why
    [notice] = repo.comments[strangers]
    assert "A maintainer must trigger this PR's CI." in notice["body"]


def _sent(settings, name: str) -> list[list]:
    return [args for task, args in sent_tasks(settings) if task == name]


def test_a_lost_notice_task_is_sent_again_by_the_reconciler(
    gh_settings, github_api, target, task_settings
):
    task_settings(gh_settings)  # tasks are sent to this test's broker folder
    repo, head = target
    number = _human_pull(github_api, repo, head, "alice/lost")
    notice = _notice(gh_settings, head, number)  # recorded and sent; pretend the task was lost
    assert _sent(gh_settings, PR_NOTICE) == [[notice]]
    url = gh_settings.resolved_database_url
    with session_scope(url) as session:
        assert resend_pending(session, older_than=timedelta(hours=1)) == 0  # not stale yet
        assert resend_pending(session, older_than=timedelta(0)) == 1
    assert _sent(gh_settings, PR_NOTICE) == [[notice], [notice]]
    with session_scope(url) as session:
        assert resend_pending(session, older_than=timedelta(seconds=30)) == 0  # just re-sent
    sync_notice(gh_settings, notice)
    with session_scope(url) as session:
        assert resend_pending(session, older_than=timedelta(0)) == 0  # posted: done
        fix_id = session.scalars(select(Fix)).one().id
        queue_refresh(session, session.get_one(Fix, fix_id))
    assert _sent(gh_settings, PR_NOTICES_REFRESH) == [[fix_id]]


def test_a_lost_refresh_still_edits_the_notice_and_posts_the_rerun_command(
    gh_settings, github_api, target, task_settings, tmp_path
):
    """The merge's refresh task is lost (a broker restarted with nothing saved): the notices
    it owed are pending in the database, so the reconciler re-sends each, and each re-send
    edits its notice and posts the re-run command, once."""
    task_settings(gh_settings)
    repo, head = target
    number = _human_pull(github_api, repo, head, "alice/merged")
    notice = _notice(gh_settings, head, number)
    assert sync_notice(gh_settings, notice) == "posted"
    _configure_rerun(repo, tmp_path)
    url = gh_settings.resolved_database_url
    with session_scope(url) as session:
        fix = session.scalars(select(Fix)).one()
        fix.state = FixState.MERGED.value
        queue_refresh(session, fix)  # its task is never run: lost with the broker
    assert _row(gh_settings, notice).state == "pending"
    with session_scope(url) as session:
        assert resend_pending(session, older_than=timedelta(0)) == 1
    assert _sent(gh_settings, PR_NOTICE)[-1] == [notice]

    assert sync_and_rerun(gh_settings, notice) == ["edited", f"posted '/bot run' on PR #{number}"]
    assert sync_and_rerun(gh_settings, notice) == ["nothing to write"]  # once
    assert _row(gh_settings, notice).state == "posted"
    [text, command] = [c["body"] for c in repo.comments[number]]
    assert "**has been merged**" in text and command == "/bot run"
    with session_scope(url) as session:
        assert resend_pending(session, older_than=timedelta(0)) == 0  # nothing owed


def test_a_fix_without_notices_queues_no_refresh(settings, task_settings):
    task_settings(settings)
    with session_scope(settings.resolved_database_url) as session:
        queue_refresh(session, _fix(session, "0" * 40))
    assert _sent(settings, PR_NOTICES_REFRESH) == []
