"""``bot.db.group_commit``: concurrent writes of one delivery id store one row; a write that fails
inside a batch is rolled back alone, with its queued task; coroutines share batches; callers
hear back after their tasks were sent, while the writer commits the next batch.
SQLite and PostgreSQL, the real filesystem broker."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.db.group_commit import AFTER_COMMIT_WORK, ONE_BY_ONE, GroupCommitter, WriteKind
from bot.db.models import CiFailure, Delivery
from bot.db.session import session_factory, session_scope
from bot.intake.deliveries import (
    DeliveryOutcome,
    GitHubDelivery,
    RecordedDelivery,
    record_deliveries,
    record_delivery,
)
from bot.queue import names as task_names
from bot.queue.enqueue import enqueue_after_commit
from tests.bot.intake.broker import sent_tasks

RECORD = WriteKind("deliveries", record_deliveries)


@pytest.fixture
def queued(settings, task_settings):
    """The parametrised settings; what is sent goes to their broker folder."""
    return task_settings(settings)


def _committer(settings) -> GroupCommitter:
    return GroupCommitter(session_factory(settings.resolved_database_url))


def _delivery_rows(settings) -> list[str]:
    with session_scope(settings.resolved_database_url) as session:
        return list(session.scalars(select(Delivery.key).order_by(Delivery.id)))


def test_concurrent_deliveries_of_one_id_store_exactly_one_row(queued):
    # Two writers stand for two API processes on one database: the unique index decides.
    writers = [_committer(queued), _committer(queued)]
    delivery = GitHubDelivery("same-id", "issue_comment", "created", b'{"action": "created"}')
    start = threading.Barrier(16)

    def send(index: int) -> RecordedDelivery:
        start.wait()
        return writers[index % 2].submit_item(RECORD, delivery).result(timeout=60)

    with ThreadPoolExecutor(max_workers=16) as pool:
        outcomes = list(pool.map(send, range(16)))
    for writer in writers:
        writer.close()
    accepted = [o for o in outcomes if o.outcome is DeliveryOutcome.ACCEPTED]
    assert len(accepted) == 1
    assert all(o.outcome is DeliveryOutcome.DUPLICATE for o in outcomes if o not in accepted)
    assert _delivery_rows(queued) == ["github:same-id"]
    assert sent_tasks(queued) == [(task_names.PROCESS_DELIVERY, [accepted[0].delivery_id])]


def test_a_repeated_id_within_one_batch_is_a_redelivery(queued):
    delivery = GitHubDelivery("twice", "workflow_job", "completed", b"{}")
    with session_scope(queued.resolved_database_url) as session:
        first, second = record_deliveries(session, [delivery, delivery])
    assert (first.outcome, second.outcome) == (DeliveryOutcome.ACCEPTED, DeliveryOutcome.DUPLICATE)
    assert _delivery_rows(queued) == ["github:twice"]


def _failing_write(session: Session) -> None:
    """Queues a task, then fails at the database: a report whose delivery does not exist."""
    enqueue_after_commit(session, task_names.TRIAGE, 424242)
    session.add(CiFailure(delivery_id=424242, format="console", findings=[]))
    session.flush()


def test_a_failing_write_is_rolled_back_alone_and_the_batch_commits(queued):
    writer = _committer(queued)
    writing, release = threading.Event(), threading.Event()

    def hold(session: Session) -> bool:  # keeps the writer busy while the next batch gathers
        writing.set()
        return release.wait(timeout=60)

    held = writer.submit(hold)
    assert writing.wait(timeout=60)
    deliveries = [
        GitHubDelivery(f"d-{n}", "issue_comment", "created", b'{"action": "created"}')
        for n in range(6)
    ]
    good = [writer.submit(lambda session, d=d: record_delivery(session, d)) for d in deliveries[:3]]
    failing = writer.submit(_failing_write)
    good += [
        writer.submit(lambda session, d=d: record_delivery(session, d)) for d in deliveries[3:]
    ]
    release.set()
    assert held.result(timeout=60) is True
    with pytest.raises(IntegrityError):
        failing.result(timeout=60)
    stored = [future.result(timeout=60) for future in good]
    writer.close()
    # The six deliveries and the failing write made one batch, after the one that held it.
    assert (writer.stats.batches, writer.stats.largest) == (2, 7)
    assert all(s.outcome is DeliveryOutcome.ACCEPTED for s in stored)
    assert _delivery_rows(queued) == [f"github:d-{n}" for n in range(6)]
    with session_scope(queued.resolved_database_url) as session:
        assert session.scalar(select(func.count(CiFailure.id))) == 0
    # The failed write's task went with its savepoint; the others' went out after the commit.
    assert sent_tasks(queued) == [(task_names.PROCESS_DELIVERY, [s.delivery_id]) for s in stored]


def test_a_lone_failing_write_gets_its_own_error(queued):
    writer = _committer(queued)
    with pytest.raises(IntegrityError):
        writer.submit(_failing_write).result(timeout=60)
    after = writer.submit(
        lambda session: record_delivery(session, GitHubDelivery("n", "x", None, b""))
    )
    assert after.result(timeout=60).outcome is DeliveryOutcome.IGNORED  # the writer goes on
    writer.close()
    assert sent_tasks(queued) == []


def test_coroutines_of_one_loop_turn_share_a_batch(queued):
    writer = _committer(queued)
    deliveries = [GitHubDelivery(f"c-{n}", "issues", "opened", b"{}") for n in range(40)]

    async def send_all() -> list[RecordedDelivery]:
        return await asyncio.gather(*(writer.write(RECORD, d) for d in deliveries))

    outcomes = asyncio.run(send_all())
    writer.close()
    assert [o.outcome for o in outcomes] == [DeliveryOutcome.IGNORED] * 40
    assert writer.stats.batches == 1 and writer.stats.writes == 40
    assert len(set(o.delivery_id for o in outcomes)) == 40
    assert _delivery_rows(queued) == [f"github:c-{n}" for n in range(40)]


def test_a_coroutines_failing_write_raises_in_it(queued):
    writer = _committer(queued)

    async def send() -> None:
        await writer.write(ONE_BY_ONE, _failing_write)

    with pytest.raises(IntegrityError):
        asyncio.run(send())
    writer.close()


def test_callers_hear_back_after_their_tasks_are_sent(queued):
    writer = _committer(queued)
    delivery = GitHubDelivery("sent-first", "issue_comment", "created", b'{"action": "created"}')
    recorded = writer.submit_item(RECORD, delivery).result(timeout=60)
    # Answered: its task is already in the broker (the release thread sent it, then answered).
    assert sent_tasks(queued) == [(task_names.PROCESS_DELIVERY, [recorded.delivery_id])]
    writer.close()


def test_the_next_batch_commits_while_the_last_ones_work_is_still_running(queued):
    writer = _committer(queued)
    sending, release = threading.Event(), threading.Event()

    def slow_send() -> None:  # stands for a broker that takes its time
        sending.set()
        release.wait(timeout=60)

    def leaves_slow_work(session: Session) -> str:
        session.info[AFTER_COMMIT_WORK].append(slow_send)
        return "first"

    first = writer.submit(leaves_slow_work)
    assert sending.wait(timeout=60)
    second = writer.submit(
        lambda session: record_delivery(session, GitHubDelivery("while", "x", None, b""))
    )
    _wait_for(lambda: _delivery_rows(queued) == ["github:while"])  # committed meanwhile
    assert not first.done() and not second.done()  # answers wait for the work, in order
    release.set()
    assert first.result(timeout=60) == "first"
    assert second.result(timeout=60).outcome is DeliveryOutcome.IGNORED
    writer.close()


def test_work_that_fails_after_the_commit_still_answers(queued):
    writer = _committer(queued)

    def broken() -> None:
        raise OSError("broker folder gone")

    def leaves_broken_work(session: Session) -> int:
        session.info[AFTER_COMMIT_WORK].append(broken)
        return 7

    assert writer.submit(leaves_broken_work).result(timeout=60) == 7  # committed: answered
    writer.close()


def _wait_for(condition, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met"
        time.sleep(0.02)
