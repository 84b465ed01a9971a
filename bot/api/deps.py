"""FastAPI dependencies of the API routes: the settings (sessions: ``bot.db.request_scope``)."""

from __future__ import annotations

from fastapi import Request

from bot.config import Settings


async def get_app_settings(request: Request) -> Settings:
    """The settings the app was created with.

    ``async`` although it awaits nothing: FastAPI runs a plain ``def`` dependency in its thread
    pool, a thread hand-off per request for one attribute read.
    """
    settings: Settings = request.app.state.settings
    return settings
