"""``bot.queue.enqueue``: tasks go out once their transaction commits; several of one name that
one commit releases go out as one dispatch message, which a worker turns back into the tasks.
The real filesystem broker, SQLite and PostgreSQL sessions."""

from __future__ import annotations

import pytest

from bot.db.session import session_scope
from bot.pipeline.dispatch import dispatch
from bot.queue import names as task_names
from bot.queue.enqueue import _PendingTask, coalesced, enqueue_after_commit
from tests.bot.intake.broker import sent_tasks


def _pending(name: str, *args: object, queue: str | None = None) -> _PendingTask:
    return _PendingTask(name, args, queue, None)


def test_several_tasks_of_one_name_become_one_dispatch_in_the_place_of_the_first() -> None:
    pending = [
        _pending(task_names.TRIAGE, 1),
        _pending(task_names.REPAIR, 9),
        _pending(task_names.TRIAGE, 2),
        _pending(task_names.VERIFY, 5, queue="gpu-h200"),
        _pending(task_names.VERIFY, 6, queue="gpu-h200"),
        _pending(task_names.TRIAGE, 3),
    ]
    sent = [(m.task_name, m.args, m.queue) for m in coalesced(pending)]
    assert sent == [
        (task_names.DISPATCH, (task_names.TRIAGE, [[1], [2], [3]]), None),
        (task_names.REPAIR, (9,), None),  # alone: sent as itself
        # Routed to a queue of their own: never folded (dispatch goes to the default queue).
        (task_names.VERIFY, (5,), "gpu-h200"),
        (task_names.VERIFY, (6,), "gpu-h200"),
    ]


def test_a_delayed_task_is_sent_as_itself() -> None:
    pending = [
        _PendingTask(task_names.MERGE_OUTCOME, (1,), None, None, countdown=30.0),
        _PendingTask(task_names.MERGE_OUTCOME, (2,), None, None, countdown=30.0),
    ]
    assert [(m.task_name, m.countdown) for m in coalesced(pending)] == [
        (task_names.MERGE_OUTCOME, 30.0),
        (task_names.MERGE_OUTCOME, 30.0),
    ]


def test_a_commit_sends_one_dispatch_and_the_worker_sends_each_task(settings, task_settings):
    task_settings(settings)
    with session_scope(settings.resolved_database_url) as session:
        for report_id in (11, 12, 13):
            enqueue_after_commit(session, task_names.TRIAGE, report_id)
        enqueue_after_commit(session, task_names.REPAIR, 7)
    first = sent_tasks(settings)
    assert first == [
        (task_names.DISPATCH, [task_names.TRIAGE, [[11], [12], [13]]]),
        (task_names.REPAIR, [7]),
    ]
    dispatch.run(*first[0][1])  # what a worker does with it
    assert sent_tasks(settings)[2:] == [(task_names.TRIAGE, [n]) for n in (11, 12, 13)]


def test_a_rolled_back_transaction_sends_nothing(settings, task_settings):
    task_settings(settings)
    with pytest.raises(RuntimeError), session_scope(settings.resolved_database_url) as session:
        enqueue_after_commit(session, task_names.TRIAGE, 1)
        enqueue_after_commit(session, task_names.TRIAGE, 2)
        raise RuntimeError("the write failed")
    assert sent_tasks(settings) == []
