"""A database session per HTTP request (a FastAPI dependency shared by the API and dashboard).

Only GET routes take one, and they only read: the intake's writes go through the group commit
(``bot.api.group_write``). So the session is a reading one, which on SQLite holds no write lock
while a page renders, and refuses ORM changes (``ReadOnlySessionError``)."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import Request
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.session import read_scope


def get_read_session(request: Request) -> Iterator[Session]:
    """A session for a route that only reads (``bot.db.session.read_scope``)."""
    settings: Settings = request.app.state.settings
    with read_scope(settings.resolved_database_url) as session:
        yield session
