"""How many messages wait in a broker queue: what tells the reconciler a task is still queued.

The database says which work is unfinished, never whether its message is still in the broker.
A message waits while the queue is not empty; once the queue has drained, unfinished work whose
message was sent before is work whose message was lost (a broker restart without persistence).
So the reconciler re-sends deliveries and queued checks only to an empty queue: a flood of
deliveries waiting their turn is never sent a second time (issue 36).
"""

from __future__ import annotations

import logging

from bot.queue.celery_app import app

log = logging.getLogger(__name__)


def waiting_messages(queue: str) -> int | None:
    """Messages waiting in ``queue`` (not the ones workers hold), or None when the broker cannot
    say (it is down, or the queue was never declared): then nothing can be known queued."""
    try:
        with app.connection_for_write() as connection:
            declared = connection.default_channel.queue_declare(queue=queue, passive=True)
            return int(declared.message_count)
    except Exception as exc:  # any broker's own error: the answer is "unknown", never a crash
        log.debug("the depth of %s is unknown: %s", queue, exc)
        return None
