"""Sending tasks only after the transaction that made their rows visible has committed.

Tasks queued in a SAVEPOINT that rolls back are dropped with it, so a write that failed inside a
group-committed batch (``bot.db.group_commit``) sends nothing while the rest of the batch does.
Everything a commit releases goes out over one producer connection, and the embedded broker
flushes it to disk once (``bot.queue.file_broker.one_sync``). Several tasks of one name that a
commit releases (a batch of CI reports' triage, say) go out as one ``repairbot.dispatch``
message that a worker splits into the tasks (:func:`send_each`): building and writing a Celery
message costs about 0.7 ms of CPU, which per report was a third of the intake's time on a
megabyte report.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session, SessionTransaction

from bot.db.group_commit import AFTER_COMMIT_WORK
from bot.queue import file_broker
from bot.queue import names as task_names
from bot.queue.breaker import BREAKER
from bot.queue.celery_app import app

_PENDING_KEY = "repairbot_pending_tasks"
_LISTENING_KEY = "repairbot_pending_listening"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _PendingTask:
    task_name: str
    args: tuple[Any, ...]
    queue: str | None
    # The innermost SAVEPOINT open when it was queued (None: the session's own transaction).
    savepoint: SessionTransaction | None
    countdown: float | None = None


def enqueue_after_commit(
    session: Session,
    task_name: str,
    *args: Any,
    queue: str | None = None,
    countdown: float | None = None,
) -> None:
    """Send ``task_name(*args)`` once ``session`` commits; drop it if its transaction rolls back.

    ``countdown``: the task runs no sooner than that many seconds after it is sent.

    A send that fails (the broker is down) is logged and counted, not raised, and pauses sends
    for a few seconds (``bot.queue.breaker``): the database already holds the work, and the
    reconciler re-sends whatever stays unfinished.
    """
    if not session.info.get(_LISTENING_KEY):
        event.listen(session, "after_commit", _send_pending)
        event.listen(session, "after_soft_rollback", _drop_rolled_back)
        session.info[_LISTENING_KEY] = True
    pending: list[_PendingTask] = session.info.setdefault(_PENDING_KEY, [])
    pending.append(
        _PendingTask(task_name, args, queue, session.get_nested_transaction(), countdown)
    )


def _send_pending(session: Session) -> None:
    pending: list[_PendingTask] = session.info.pop(_PENDING_KEY, [])
    if not pending:
        return
    deferred: list[Callable[[], None]] | None = session.info.get(AFTER_COMMIT_WORK)
    if deferred is not None:  # a group commit: its release thread sends them, then answers
        deferred.append(functools.partial(_send, pending))
    else:
        _send(pending)


@dataclass(frozen=True)
class _Message:
    task_name: str
    args: tuple[Any, ...]
    queue: str | None = None
    countdown: float | None = None


def coalesced(pending: list[_PendingTask]) -> list[_Message]:
    """The messages that send ``pending``: tasks routed by name and not delayed, when several
    share a name, become one dispatch message (in the place of the first); the rest as they are.
    """
    plain: dict[str, list[_PendingTask]] = {}
    for task in pending:
        if _foldable(task):
            plain.setdefault(task.task_name, []).append(task)
    messages: list[_Message] = []
    for task in pending:
        group = plain[task.task_name] if _foldable(task) else []
        if not group:  # routed to a queue of its own, or delayed
            messages.append(_Message(task.task_name, task.args, task.queue, task.countdown))
        elif len(group) == 1:
            messages.append(_Message(task.task_name, task.args))
        elif task is group[0]:
            calls = [list(member.args) for member in group]
            messages.append(_Message(task_names.DISPATCH, (task.task_name, calls)))
    return messages


def _foldable(task: _PendingTask) -> bool:
    return task.queue is None and task.countdown is None


def send_each(task_name: str, calls: list[list[Any]]) -> None:
    """Send ``task_name(*args)`` for each ``args`` in ``calls`` (a dispatch message's tasks),
    flushed to disk once; raises if the broker fails (the dispatch task is then retried)."""
    with file_broker.one_sync(), app.producer_or_acquire() as producer:
        for args in calls:
            app.send_task(task_name, args=args, producer=producer)


def _send(pending: list[_PendingTask]) -> None:
    if BREAKER.paused():  # a send failed moments ago: do not make this request wait it out too
        BREAKER.skipped(len(pending))
        log.info("broker down: %d task(s) left for the reconciler", len(pending))
        return
    try:
        # One flush to disk for all of them (the embedded broker's files; other brokers: no-op).
        with file_broker.one_sync(), app.producer_or_acquire() as producer:
            for message in coalesced(pending):
                app.send_task(
                    message.task_name,
                    args=message.args,
                    queue=message.queue,
                    producer=producer,
                    countdown=message.countdown,
                    # Read each time: Celery keeps the policy it saw first (configure_celery).
                    retry_policy=app.conf.task_publish_retry_policy,
                )
    except Exception:  # the rows are committed: a broker outage must not fail the request
        BREAKER.failed(len(pending))
        log.warning(
            "could not send %d task(s) (first %s%r); the reconciler will re-send them",
            len(pending),
            pending[0].task_name,
            pending[0].args,
            exc_info=True,
        )


def _drop_rolled_back(session: Session, rolled_back: SessionTransaction) -> None:
    pending: list[_PendingTask] | None = session.info.get(_PENDING_KEY)
    if not pending:
        return
    if not rolled_back.nested:  # the session's transaction: nothing it queued is sent
        session.info.pop(_PENDING_KEY, None)
        return
    pending[:] = [task for task in pending if not _inside(task.savepoint, rolled_back)]


def _inside(savepoint: SessionTransaction | None, ancestor: SessionTransaction) -> bool:
    """Whether ``savepoint`` is ``ancestor`` or nested in it."""
    while savepoint is not None:
        if savepoint is ancestor:
            return True
        savepoint = savepoint.parent
    return False
