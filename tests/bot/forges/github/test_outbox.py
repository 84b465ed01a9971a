"""The outbox against the GitHub double: a write asked for in a transaction is only recorded
there and sent after the commit by its task; the per-minute cap is slots reserved in short
transactions; waiting for a slot holds no database lock; a refusal is kept and never re-sent."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from datetime import timedelta

import pytest
from sqlalchemy import select

from bot.db.models import utcnow
from bot.db.records.github_writes import GitHubWrite
from bot.db.session import session_scope
from bot.forges.github.api import GitHubApi
from bot.forges.github.outbox import (
    NoSlot,
    Written,
    reserve_slot,
    write_once,
    writes_in_last_minute,
)
from bot.pipeline.github_send import ComeBack, resend_pending_writes, send_write
from bot.queue import names as task_names
from tests.bot.conftest import REPO
from tests.bot.intake.broker import sent_tasks
from tests.fakes.github_api import Call
from tests.fakes.github_git import git_out

SQLITE = pytest.mark.parametrize("settings", ["sqlite"], indirect=True)


@pytest.fixture
def pull(gh_settings, github_api, target, task_settings) -> int:
    task_settings(gh_settings)  # tasks are sent to (and read from) this test's broker
    repo, head = target
    git_out(repo.path, "branch", "feature", head)
    return github_api.open_pull(REPO, head="feature", title="[None][feat] f")


def _spend_the_budget(settings, slots: int) -> None:
    """``slots`` writes sent in the last minute (other processes', say)."""
    with session_scope(settings.resolved_database_url) as session:
        for i in range(slots):
            session.add(
                GitHubWrite(key=f"spent:{i}", kind="comment", repository=REPO, slot_at=utcnow())
            )


def _posts(github_api) -> list[Call]:
    return github_api.calls_to("POST", r"/issues/\d+/comments$")


def test_a_write_in_a_transaction_is_sent_after_it_commits(gh_settings, github_api, pull):
    with session_scope(gh_settings.resolved_database_url) as session:
        assert GitHubApi(gh_settings).post_comment(session, REPO, pull, "hi", key="k1") is None
        assert sent_tasks(gh_settings) == []  # nothing before the commit
    [(name, [write_id])] = sent_tasks(gh_settings)
    assert name == task_names.SEND_GITHUB_WRITE and _posts(github_api) == []
    assert send_write(gh_settings, write_id).startswith(f"write #{write_id} sent: comment")
    assert send_write(gh_settings, write_id) == f"write #{write_id} already sent"
    assert len(_posts(github_api)) == 1


def test_a_rolled_back_transaction_sends_nothing(gh_settings, github_api, pull):
    with pytest.raises(RuntimeError), session_scope(gh_settings.resolved_database_url) as session:
        GitHubApi(gh_settings).post_comment(session, REPO, pull, "hi", key="k2")
        raise RuntimeError("the handler failed after asking for the reply")
    assert sent_tasks(gh_settings) == []
    with session_scope(gh_settings.resolved_database_url) as session:
        assert session.scalars(select(GitHubWrite)).all() == []


def test_no_slot_sends_the_task_back_and_the_reconciler_waits_for_it(gh_settings, github_api, pull):
    settings = gh_settings.model_copy(update={"github_writes_per_minute": 3})
    _spend_the_budget(settings, 3)
    with session_scope(settings.resolved_database_url) as session:
        GitHubApi(settings).post_comment(session, REPO, pull, "hi", key="k3")
    [(_, [write_id])] = sent_tasks(settings)
    with pytest.raises(ComeBack) as back:
        send_write(settings, write_id)
    assert 0 < back.value.after_s <= 60 and _posts(github_api) == []
    with session_scope(settings.resolved_database_url) as session:
        assert writes_in_last_minute(session) == 3  # the write took no slot
        # Its comeback is not a lost message: the reconciler leaves it until after then.
        assert resend_pending_writes(session, older_than=timedelta(seconds=0)) == 0
        for row in session.scalars(select(GitHubWrite).where(GitHubWrite.key.like("spent:%"))):
            row.slot_at = utcnow() - timedelta(seconds=61)  # the minute passed
    assert send_write(settings, write_id).startswith(f"write #{write_id} sent")
    assert len(_posts(github_api)) == 1


@SQLITE
def test_waiting_for_a_slot_holds_no_database_lock(gh_settings, github_api, pull):
    settings = gh_settings.model_copy(update={"github_writes_per_minute": 1})
    _spend_the_budget(settings, 1)
    path = settings.resolved_database_url.removeprefix("sqlite:///")
    taken: list[str] = []

    def sleep(seconds: float) -> None:
        # Another writer (the intake) takes the write lock at once: nobody holds it.
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
            taken.append(f"lock free while waiting {seconds:.0f}s")
        finally:
            other.close()
        with session_scope(settings.resolved_database_url) as session:
            for row in session.scalars(select(GitHubWrite).where(GitHubWrite.key == "spent:0")):
                row.slot_at = utcnow() - timedelta(seconds=61)

    api = GitHubApi(settings)

    def post() -> Written:
        made = api.repo(REPO).get_issue(pull).create_comment("x")
        return Written(str(made.id), made.html_url, fresh=True)

    written = write_once(
        settings,
        key="k4",
        kind="comment",
        repository=REPO,
        target=str(pull),
        post=post,
        find=lambda: None,
        wait=True,
        sleep=sleep,
    )
    assert written.remote_id and len(taken) == 1


def test_slots_are_shared_and_a_write_holds_at_most_one(gh_settings, github_api, pull):
    settings = gh_settings.model_copy(update={"github_writes_per_minute": 2})
    with session_scope(settings.resolved_database_url) as session:
        session.add_all(GitHubWrite(key=k, kind="comment", repository=REPO) for k in "abc")
    assert reserve_slot(settings, "a") == 0 and reserve_slot(settings, "b") == 0
    assert reserve_slot(settings, "c") > 0  # the cap
    assert reserve_slot(settings, "a") > 0  # "a" holds a slot of this minute: in flight


def test_a_refused_write_is_kept_with_the_reason_and_never_resent(gh_settings, github_api, pull):
    github_api.fault("POST", r"/issues/\d+/comments$", status=403)
    with session_scope(gh_settings.resolved_database_url) as session:
        GitHubApi(gh_settings).post_comment(session, REPO, pull, "hi", key="k5")
    [(_, [write_id])] = sent_tasks(gh_settings)
    assert send_write(gh_settings, write_id) == f"write #{write_id} refused by GitHub (403)"
    with session_scope(gh_settings.resolved_database_url) as session:
        [row] = session.scalars(select(GitHubWrite)).all()
        assert row.error is not None and row.error.startswith("GitHub answered 403")
        row.sent_at = utcnow() - timedelta(hours=1)
        assert resend_pending_writes(session, older_than=timedelta(seconds=1)) == 0


def test_no_slot_for_a_synchronous_caller_that_may_not_wait(gh_settings, github_api, pull):
    settings = gh_settings.model_copy(update={"github_writes_per_minute": 1})
    _spend_the_budget(settings, 1)
    with pytest.raises(NoSlot):
        GitHubApi(settings).send_deferred(
            "k6", "comment", REPO, str(pull), {"number": pull, "body": "x", "marked": True}
        )


def test_one_key_written_at_once_by_many_threads_is_posted_once(gh_settings, github_api, pull):
    """Four workers (real threads, one barrier) send the same write at once: whichever claims
    the row, exactly one reserves its slot and POSTs; the others wait for its answer and return
    it, instead of posting again or giving up with ``NoSlot``."""
    api = GitHubApi(gh_settings)
    barrier = threading.Barrier(4)
    got: list[Written | BaseException] = []

    def post() -> Written:
        made = api.repo(REPO).get_issue(pull).create_comment("once")
        return Written(str(made.id), made.html_url, fresh=True)

    def worker() -> None:
        barrier.wait()
        try:
            got.append(
                write_once(
                    gh_settings,
                    key="k-race",
                    kind="comment",
                    repository=REPO,
                    target=str(pull),
                    post=post,
                    find=lambda: None,  # nothing to find: a second POST would show
                )
            )
        except BaseException as exc:  # handed to the test thread
            got.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(isinstance(g, Written) for g in got), got
    assert len({g.remote_id for g in got if isinstance(g, Written)}) == 1
    assert github_api.comment_bodies(REPO, pull) == ["once"]
    assert github_api.writes(REPO)["comment"] == 1


def _post_in_a_process(settings, pull: int, barrier, answers) -> None:
    """A worker process: post comment ``k-procs`` once, after the barrier; its answer queued."""
    api = GitHubApi(settings)

    def post() -> Written:
        made = api.repo(REPO).get_issue(pull).create_comment("once, two processes")
        return Written(str(made.id), made.html_url, fresh=True)

    barrier.wait()
    try:
        written = write_once(
            settings,
            key="k-procs",
            kind="comment",
            repository=REPO,
            target=str(pull),
            post=post,
            find=lambda: None,
        )
        answers.put(written.remote_id)
    except Exception as exc:  # reported to the test process
        answers.put(f"raised {exc!r}")


def test_one_key_written_at_once_by_two_processes_is_posted_once(gh_settings, github_api, pull):
    """The same, across processes (spawned: each its own engine and connections), as two API
    replicas or workers would: one POST on the double, one answer for both."""
    context = multiprocessing.get_context("spawn")
    barrier, answers = context.Barrier(2), context.Queue()
    workers = [
        context.Process(target=_post_in_a_process, args=(gh_settings, pull, barrier, answers))
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    got = sorted(answers.get(timeout=5) for _ in workers)
    assert got[0] == got[1] and not got[0].startswith("raised"), got
    assert github_api.comment_bodies(REPO, pull) == ["once, two processes"]


def test_after_a_failed_attempt_the_next_looks_on_github_then_sends_at_once(gh_settings):
    """An attempt that raised is over: the task's retry does not wait for it (before, it polled
    10 s for an answer that would never come, then waited for the slot to expire)."""
    key, sleeps, looked = "comment:fails-once", [], []

    def unanswered() -> Written:
        raise ConnectionError("GitHub did not answer")

    def find() -> Written | None:
        looked.append(key)  # the failed attempt may have landed: looked for before sending
        return None

    def write(post):  # type: ignore[no-untyped-def]
        return write_once(
            gh_settings, key=key, kind="comment", repository=REPO, target="7",
            post=post, find=find, sleep=sleeps.append,
        )  # fmt: skip

    with pytest.raises(ConnectionError):
        write(unanswered)
    assert write(lambda: Written("41", None, fresh=True)).remote_id == "41"
    assert looked == [key] and sleeps == []
    with session_scope(gh_settings.resolved_database_url) as session:
        row = session.scalar(select(GitHubWrite).where(GitHubWrite.key == key))
        assert row is not None and row.failed_at is None and row.remote_id == "41"
        assert writes_in_last_minute(session) == 1  # the retry took the slot over


def test_an_attempt_still_in_flight_is_waited_for_not_sent_again(gh_settings):
    """Only a failed attempt is skipped: one that holds the slot without an answer yet (another
    worker sending it now) is polled for, then ``NoSlot``."""
    key, sleeps = "comment:in-flight", []
    with session_scope(gh_settings.resolved_database_url) as session:
        session.add(GitHubWrite(key=key, kind="comment", repository=REPO, slot_at=utcnow()))
    with pytest.raises(NoSlot):
        write_once(
            gh_settings, key=key, kind="comment", repository=REPO, target="7",
            post=lambda: Written("41", None, fresh=True), find=lambda: None, sleep=sleeps.append,
        )  # fmt: skip
    assert len(sleeps) >= 50  # polled for its answer (simulated time)


def test_an_attempt_failing_after_another_took_its_slot_over_leaves_that_one_in_flight(
    gh_settings,
):
    """A slow attempt whose slot expired and was taken over fails afterwards: the attempt now
    holding the slot is still sending, so it is not marked failed (a third would send too)."""
    key = "comment:overtaken"

    def overtaken_then_unanswered() -> Written:
        with session_scope(gh_settings.resolved_database_url) as session:
            row = session.scalar(select(GitHubWrite).where(GitHubWrite.key == key))
            row.slot_at = utcnow() + timedelta(seconds=1)  # another attempt's, after expiry
        raise ConnectionError("GitHub did not answer")

    with pytest.raises(ConnectionError):
        write_once(
            gh_settings, key=key, kind="comment", repository=REPO, target="7",
            post=overtaken_then_unanswered, find=lambda: None,
        )  # fmt: skip
    with session_scope(gh_settings.resolved_database_url) as session:
        row = session.scalar(select(GitHubWrite).where(GitHubWrite.key == key))
        assert row is not None and row.failed_at is None
