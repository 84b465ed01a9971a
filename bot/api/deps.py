"""FastAPI dependencies of the API routes: the settings (sessions: ``bot.db.request_scope``)."""

from __future__ import annotations

from fastapi import Request

from bot.config import Settings


def get_app_settings(request: Request) -> Settings:
    """The settings the app was created with."""
    settings: Settings = request.app.state.settings
    return settings
