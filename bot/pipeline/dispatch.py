"""The worker's side of a dispatch message: the tasks one commit released together, sent each.

``bot.queue.enqueue`` sends several tasks of one name as one message, to keep the cost of a
Celery message off the request that queued them; here each becomes its own task again, so they
still spread over the workers. Rerunning it sends them again, which every task tolerates (tasks
take ids and are safe to rerun).
"""

from __future__ import annotations

from typing import Any

from kombu.exceptions import OperationalError as BrokerError

from bot.pipeline.task_base import RepairbotTask
from bot.queue import names as task_names
from bot.queue.celery_app import app
from bot.queue.enqueue import send_each

DISPATCHABLE = frozenset(
    value
    for name, value in vars(task_names).items()
    if name.isupper() and isinstance(value, str) and value.startswith("repairbot.")
) - {task_names.DISPATCH}


# A broker that fails mid-way is retried: the tasks already sent are sent again, harmlessly.
@app.task(
    name=task_names.DISPATCH, base=RepairbotTask, bind=True, autoretry_for=(BrokerError, OSError)
)
def dispatch(self: RepairbotTask, task_name: str, calls: list[list[Any]]) -> None:
    """Send ``task_name(*args)`` for each ``args`` of ``calls``: only one of repairbot's own
    tasks (``bot.queue.names``; a name no worker knows would sit in the queue), each call a
    list."""
    if task_name not in DISPATCHABLE:
        raise ValueError(f"not a task to dispatch: {task_name!r}")
    if not isinstance(calls, list) or not all(isinstance(args, list) for args in calls):
        raise ValueError(f"{task_name}: calls must be a list of argument lists")
    send_each(task_name, calls)
