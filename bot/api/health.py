"""Liveness and readiness.

``/readyz`` answers 503 while the database is down (the API cannot accept work: a load balancer
should send requests elsewhere) and 200 with ``"status": "degraded"`` while only the broker is
down: the API still stores work, and the reconciler sends it once the broker is back, so taking
every replica out of rotation would turn a delay into refused deliveries.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, status
from fastapi.responses import JSONResponse
from sqlalchemy import text
from sqlalchemy.orm import Session

from bot.api.deps import get_app_settings
from bot.api.outage import counted_retry_after
from bot.config import Settings
from bot.db.request_scope import get_read_session
from bot.queue.broker_state import broker_state
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
) -> JSONResponse:
    """The database answers and is migrated, the broker answers (or is the embedded one); and
    how target code is confined on this host (it runs either way: a missing sandbox is the
    verifications' error, not the API's)."""
    broker = broker_state(settings)
    body: dict[str, Any] = {"broker": broker}
    try:
        version = session.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
    except Exception as exc:  # down, or not migrated: either way not ready
        reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        body |= {"status": "unavailable", "database": "down", "detail": f"database: {reason}"}
        headers = counted_retry_after(settings)
        return JSONResponse(body, status.HTTP_503_SERVICE_UNAVAILABLE, headers)
    body |= {
        "status": "degraded" if broker == "down" else "ready",
        "database": "up",
        "schema": str(version),
        **sandbox_state(settings),
    }
    return JSONResponse(body)
