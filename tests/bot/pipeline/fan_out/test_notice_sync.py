"""One fan-out notice synced by many tasks at once, on SQLite and PostgreSQL, counted on the
GitHub double: one comment per PR; the newest planned text is the one left showing (a stale plan
is dropped unsent; one overtaken in flight makes the newest go again); edits are outbox writes
under the per-minute cap; a notice whose newest text went unsent is re-sent by the reconciler."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import select

from bot.db.models import FixState, utcnow
from bot.db.records.github_writes import GitHubWrite
from bot.db.session import session_scope
from bot.forges.github.forge import GitHubForge
from bot.forges.github.outbox import NoSlot
from bot.pipeline.fan_out.notice_sync import _plan, _send, _sent, _stale, sync_notice
from bot.pipeline.fan_out.task import resend_pending
from tests.bot.conftest import REPO
from tests.bot.pipeline.fan_out.test_task import _human_pull, _notice, _row, _set_fix

MERGED = "**has been merged** into `main`"


def _posted(settings, github_api, target, branch: str) -> tuple[int, int]:
    """A notice posted on a human's PR: (notice id, PR number)."""
    repo, head = target
    number = _human_pull(github_api, repo, head, branch)
    notice = _notice(settings, head, number)
    assert sync_notice(settings, notice) == "posted"
    return notice, number


def test_many_tasks_at_once_post_one_notice_with_the_newest_text(gh_settings, github_api, target):
    repo, head = target
    number = _human_pull(github_api, repo, head, "alice/many")
    notice = _notice(gh_settings, head, number)
    barrier = threading.Barrier(6)
    said: list[str] = []

    def task() -> None:
        barrier.wait()
        said.append(sync_notice(gh_settings, notice))

    threads = [threading.Thread(target=task) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(said) == 6 and "posted" in said, said
    [body] = github_api.comment_bodies(REPO, number)
    assert "**Verification of the fix:** not requested" in body
    assert github_api.writes(REPO)["comment"] == 1
    assert github_api.writes(REPO)["comment-edit"] == 0  # the same text: never edited
    assert sync_notice(gh_settings, notice) == "nothing to write"


def test_a_stale_plan_is_dropped_unsent(gh_settings, github_api, target):
    notice, number = _posted(gh_settings, github_api, target, "alice/stale")
    _set_fix(gh_settings, state=FixState.CLOSED.value, state_reason="closed by a maintainer")
    older = _plan(gh_settings, notice)  # task A plans the "closed" text ...
    assert older is not None
    _set_fix(gh_settings, state=FixState.MERGED.value, state_reason="merged on GitHub")
    assert sync_notice(gh_settings, notice) == "edited"  # ... task B plans and sends "merged"
    assert _stale(gh_settings, older)  # A's text is older than the row's: A sends nothing
    [body] = github_api.comment_bodies(REPO, number)
    assert MERGED in body
    assert github_api.writes(REPO)["comment-edit"] == 1


def test_a_plan_overtaken_in_flight_sends_the_newest_again(gh_settings, github_api, target):
    notice, number = _posted(gh_settings, github_api, target, "alice/overtaken")
    _set_fix(gh_settings, state=FixState.CLOSED.value, state_reason="closed by a maintainer")
    older = _plan(gh_settings, notice)
    assert older is not None and not _stale(gh_settings, older)
    comment_id, url, edited = _send(GitHubForge(gh_settings), older)  # A's edit is in flight
    _set_fix(gh_settings, state=FixState.MERGED.value, state_reason="merged on GitHub")
    assert sync_notice(gh_settings, notice) == "edited"  # B's newer edit took its slot meanwhile
    # A records: its edit may have landed after B's, so the newest text is due again.
    assert not _sent(gh_settings, older, comment_id=comment_id, url=url, edited=edited)
    assert sync_notice(gh_settings, notice) == "edited"
    assert sync_notice(gh_settings, notice) == "nothing to write"
    [body] = github_api.comment_bodies(REPO, number)
    assert MERGED in body
    row = _row(gh_settings, notice)
    assert row.sent_version == row.version and row.edits == 3


def test_edits_take_a_slot_under_the_cap(gh_settings, github_api, target):
    notice, number = _posted(gh_settings, github_api, target, "alice/capped")
    settings = gh_settings.model_copy(update={"github_writes_per_minute": 1})
    _set_fix(settings, state=FixState.MERGED.value, state_reason="merged on GitHub")
    with pytest.raises(NoSlot):  # the notice's creation holds this minute's only slot
        sync_notice(settings, notice)
    assert github_api.writes(REPO)["comment-edit"] == 0
    with session_scope(settings.resolved_database_url) as session:
        for row in session.scalars(select(GitHubWrite)):
            row.slot_at = utcnow() - timedelta(seconds=61)  # the minute passed
    assert sync_notice(settings, notice) == "edited"
    with session_scope(settings.resolved_database_url) as session:
        kinds = sorted(row.kind for row in session.scalars(select(GitHubWrite)))
    assert kinds == ["comment", "comment-edit"]
    assert MERGED in github_api.comment_bodies(REPO, number)[0]


def test_a_newest_text_left_unsent_is_resent_by_the_reconciler(
    gh_settings, github_api, target, task_settings
):
    task_settings(gh_settings)
    notice, _ = _posted(gh_settings, github_api, target, "alice/unsent")
    _set_fix(gh_settings, state=FixState.MERGED.value, state_reason="merged on GitHub")
    assert _plan(gh_settings, notice) is not None  # planned, then its task was lost
    with session_scope(gh_settings.resolved_database_url) as session:
        assert resend_pending(session, older_than=timedelta(0)) == 1
    assert sync_notice(gh_settings, notice) == "edited"
    with session_scope(gh_settings.resolved_database_url) as session:
        assert resend_pending(session, older_than=timedelta(0)) == 0
