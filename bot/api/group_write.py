"""Routes' durable writes go through the process's group commit (``bot.db.group_commit``)."""

from __future__ import annotations

from typing import TypeVar

from fastapi import HTTPException, status
from sqlalchemy.exc import SQLAlchemyError

from bot.api.outage import counted_retry_after
from bot.config import Settings
from bot.db.group_commit import WriteKind, committer_for
from bot.db.outage import database_unreachable

ItemT = TypeVar("ItemT")
T = TypeVar("T")


async def committed(settings: Settings, kind: WriteKind[ItemT, T], item: ItemT) -> T:
    """``item`` written (with the other writes of ``kind`` in its batch) and committed; its
    result, or 503 if the database failed (an unreachable server's error is raised as it is,
    for the app's handler: ``bot.api.outage``).

    The event loop waits on the writer's future: no worker thread is held per request.
    """
    try:
        return await committer_for(settings.resolved_database_url).write(kind, item)
    except SQLAlchemyError as exc:
        if database_unreachable(exc):
            raise  # the server is down: the app's one answer for that
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            f"could not store the request ({type(exc).__name__}); nothing was kept: retry",
            headers=counted_retry_after(settings),
        ) from exc
