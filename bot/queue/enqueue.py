"""Sending tasks only after the transaction that made their rows visible has committed."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session

from bot.queue.celery_app import app

_PENDING_KEY = "repairbot_pending_tasks"
log = logging.getLogger(__name__)


def enqueue_after_commit(
    session: Session, task_name: str, *args: Any, queue: str | None = None
) -> None:
    """Send ``task_name(*args)`` once ``session`` commits; drop it if the session rolls back.

    A send that fails (the broker is down) is logged, not raised: the database already holds the
    work, and the reconciler re-sends whatever stays unfinished.
    """
    pending: list[tuple[str, tuple[Any, ...], str | None]] = session.info.setdefault(
        _PENDING_KEY, []
    )
    if not pending:
        event.listen(session, "after_commit", _send_pending, once=True)
        event.listen(session, "after_rollback", _drop_pending, once=True)
    pending.append((task_name, args, queue))


def _send_pending(session: Session) -> None:
    for task_name, args, queue in session.info.pop(_PENDING_KEY, []):
        try:
            app.send_task(task_name, args=args, queue=queue)
        except Exception:  # the rows are committed: a broker outage must not fail the request
            log.warning(
                "could not send %s%r; the reconciler will re-send it",
                task_name,
                args,
                exc_info=True,
            )


def _drop_pending(session: Session) -> None:
    session.info.pop(_PENDING_KEY, None)
