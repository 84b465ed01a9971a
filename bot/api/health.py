"""Liveness and readiness."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, status
from sqlalchemy import text
from sqlalchemy.orm import Session

from bot.api.deps import get_app_settings
from bot.config import Settings
from bot.db.request_scope import get_read_session
from bot.runner.sandbox import sandbox_state
from bot.version import __version__

router = APIRouter()


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process answers, and says which version it is."""
    return {"status": "ok", "version": __version__}


@router.get("/readyz")
def readyz(
    session: Annotated[Session, Depends(get_read_session)],
    settings: Annotated[Settings, Depends(get_app_settings)],
) -> dict[str, str]:
    """The database answers and is migrated; and how target code is confined on this host (it
    runs either way: a missing sandbox is the verifications' error, not the API's)."""
    try:
        version = session.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
    except Exception as exc:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, f"database not ready: {exc}"
        ) from exc
    return {"status": "ready", "schema": str(version), **sandbox_state(settings)}
