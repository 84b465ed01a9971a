"""Commit statuses once per change, on SQLite and PostgreSQL, counted on the GitHub double: the
same status asked for at once by two threads (two contract checks of one head) or redelivered is
POSTed once; each genuine change goes out, in order, and the last one asked for is the one shown;
an older one still unsent is dropped, and one overtaken in flight makes the newest go again."""

from __future__ import annotations

import threading
from collections.abc import Callable

from sqlalchemy import select

from bot.db.records.github_statuses import GitHubStatus
from bot.db.records.github_writes import GitHubWrite
from bot.db.session import session_scope
from bot.forges.github.api import GitHubApi
from bot.forges.github.outbox import Written
from bot.forges.github.statuses import SUPERSEDED, overtaken, status_key
from bot.pipeline.github_send import send_write
from tests.bot.conftest import REPO
from tests.bot.intake.broker import sent_tasks

CONTEXT = "repairbot/contract"


def _status(api: GitHubApi, sha: str, state: str, description: str, session=None) -> None:
    api.commit_status(
        session,
        REPO,
        sha,
        state=state,  # type: ignore[arg-type]
        context=CONTEXT,
        description=description,
        target_url=None,
    )


def _together(*calls: Callable[[], None]) -> None:
    """Run ``calls`` in threads that start at one barrier; re-raise what any of them raised."""
    barrier = threading.Barrier(len(calls))
    errors: list[BaseException] = []

    def run(call: Callable[[], None]) -> None:
        barrier.wait()
        try:
            call()
        except BaseException as exc:  # handed to the test thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def test_the_same_status_asked_for_at_once_is_posted_once(gh_settings, github_api, target):
    _, head = target
    api = GitHubApi(gh_settings)
    _together(*[lambda: _status(api, head, "pending", "checking")] * 4)
    assert github_api.statuses_of(REPO, head) == [(CONTEXT, "pending", "checking")]
    _status(api, head, "pending", "checking")  # a redelivery, later
    assert github_api.writes(REPO)["status"] == 1


def test_each_change_goes_out_in_order_and_the_last_one_shows(gh_settings, github_api, target):
    _, head = target
    api = GitHubApi(gh_settings)
    steps = [
        ("pending", "checking"),
        ("success", "clean"),
        ("pending", "re-run"),
        ("success", "clean"),
    ]
    for state, description in steps:
        _status(api, head, state, description)
        _status(api, head, state, description)  # asked for twice: once
    assert github_api.statuses_of(REPO, head) == [(CONTEXT, s, d) for s, d in steps]
    assert github_api.status_now(REPO, head, CONTEXT) == ("success", "clean")
    with session_scope(gh_settings.resolved_database_url) as session:
        assert session.scalars(select(GitHubStatus.version)).all() == [4]


def test_an_older_status_still_unsent_is_dropped(gh_settings, github_api, target, task_settings):
    _, head = target
    task_settings(gh_settings)
    api = GitHubApi(gh_settings)
    with session_scope(gh_settings.resolved_database_url) as session:
        _status(api, head, "pending", "checking", session)
    with session_scope(gh_settings.resolved_database_url) as session:
        _status(api, head, "failure", "2 violations", session)
    [(_, [older]), (_, [newer])] = sent_tasks(gh_settings)
    send_write(gh_settings, newer)
    send_write(gh_settings, older)  # its task ran late: GitHub must keep showing the newer one
    assert github_api.statuses_of(REPO, head) == [(CONTEXT, "failure", "2 violations")]
    with session_scope(gh_settings.resolved_database_url) as session:
        dropped = session.get_one(GitHubWrite, older)
        assert dropped.remote_id == SUPERSEDED


def test_a_status_overtaken_in_flight_sends_the_newest_once_more(gh_settings, github_api, target):
    _, head = target
    api = GitHubApi(gh_settings)
    _status(api, head, "pending", "checking")  # version 1
    ours = {"repository": REPO, "sha": head, "context": CONTEXT, "state": "pending"}
    ours |= {"description": "checking", "target_url": None, "version": 1}
    landed = Written("1", None, fresh=True)
    assert overtaken(gh_settings, ours, landed) is None  # nothing newer: ours shows
    with session_scope(gh_settings.resolved_database_url) as session:
        _status(api, head, "success", "clean", session)  # version 2, not sent yet
    assert overtaken(gh_settings, ours, landed) is None  # it is sent after ours: it shows
    with session_scope(gh_settings.resolved_database_url) as session:
        newer = session.scalar(
            select(GitHubWrite).where(GitHubWrite.key == status_key(REPO, head, CONTEXT, 2))
        )
        assert newer is not None
        newer.slot_at = newer.created_at  # it took its slot: it may be on GitHub before ours
    again = overtaken(gh_settings, ours, landed)
    assert again is not None
    assert (again["state"], again["description"], again["version"]) == ("success", "clean", 3)


def test_a_status_whose_answer_was_lost_is_found_not_posted_again(gh_settings, github_api, target):
    _, head = target
    github_api.fault("POST", rf"/statuses/{head}$", status=502, after_effect=True)
    _status(GitHubApi(gh_settings), head, "failure", "1 violation")
    assert github_api.statuses_of(REPO, head) == [(CONTEXT, "failure", "1 violation")]
    with session_scope(gh_settings.resolved_database_url) as session:
        [write] = session.scalars(select(GitHubWrite)).all()
        assert write.remote_id is not None  # recorded from what GitHub showed


def test_a_status_github_shows_already_is_not_posted_again(
    gh_settings, github_api, target, task_settings
):
    """pending, then success dropped unsent, then pending again: GitHub still shows the first
    pending, so the third request is not POSTed (it would be the same status twice in a row)."""
    _, head = target
    task_settings(gh_settings)
    api = GitHubApi(gh_settings)
    url = gh_settings.resolved_database_url
    for state, description in (("pending", "verifying"), ("success", "fixed")):
        with session_scope(url) as session:
            _status(api, head, state, description, session)
    [(_, [first]), (_, [dropped])] = sent_tasks(gh_settings)
    send_write(gh_settings, first)
    with session_scope(url) as session:
        _status(api, head, "pending", "verifying", session)
    [*_, (_, [again])] = sent_tasks(gh_settings)
    send_write(gh_settings, dropped)
    send_write(gh_settings, again)
    assert github_api.statuses_of(REPO, head) == [(CONTEXT, "pending", "verifying")]
    assert github_api.writes(REPO)["status"] == 1
    with session_scope(url) as session:
        assert session.get_one(GitHubWrite, dropped).remote_id == SUPERSEDED
        assert session.get_one(GitHubWrite, again).remote_id is not None  # settled, unsent
    with session_scope(url) as session:
        _status(api, head, "success", "fixed", session)  # a real change still goes out
    [*_, (_, [done])] = sent_tasks(gh_settings)
    send_write(gh_settings, done)
    assert github_api.status_now(REPO, head, CONTEXT) == ("success", "fixed")
    assert github_api.writes(REPO)["status"] == 2


def test_the_newest_status_is_posted_again_when_an_older_one_landed_last(
    gh_settings, github_api, target, task_settings
):
    """v1 (pending) and v2 (success) both in flight; v2's answer is recorded first, then v1
    lands last and GitHub shows pending. The resend of v2's status must be POSTed, not taken
    for what GitHub shows, and it is deferred to its own task (a refusal now cannot lose it)."""
    _, head = target
    task_settings(gh_settings)
    api = GitHubApi(gh_settings)
    url = gh_settings.resolved_database_url
    for state, description in (("pending", "checking"), ("success", "clean")):
        with session_scope(url) as session:
            _status(api, head, state, description, session)
    [(_, [first]), (_, [second])] = sent_tasks(gh_settings)
    send_write(gh_settings, second)  # v2 lands and is recorded first
    with session_scope(url) as session:
        v1 = session.get_one(GitHubWrite, first)
        v1.slot_at = v1.created_at  # v1 had taken its slot: it was in flight
    ours = {"repository": REPO, "sha": head, "context": CONTEXT, "state": "pending"}
    ours |= {"description": "checking", "target_url": None, "version": 1}
    again = overtaken(gh_settings, ours, Written("1", None, fresh=True))  # v1 landed last
    assert again is not None and (again["state"], again["version"]) == ("success", 3)
    [*_, (_, [resend])] = sent_tasks(gh_settings)
    with session_scope(url) as session:
        row = session.get_one(GitHubWrite, resend)
        assert row.key == status_key(REPO, head, CONTEXT, 3) and row.remote_id is None
    send_write(gh_settings, resend)
    assert github_api.statuses_of(REPO, head)[-1] == (CONTEXT, "success", "clean")
    assert github_api.writes(REPO)["status"] == 2  # v2, then the resend (v1 never sent here)
