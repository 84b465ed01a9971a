"""A database session per HTTP request (a FastAPI dependency shared by the API and dashboard)."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import Request
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.session import session_scope


def get_session(request: Request) -> Iterator[Session]:
    """A session that commits when the handler returns normally."""
    settings: Settings = request.app.state.settings
    with session_scope(settings.resolved_database_url) as session:
        yield session
