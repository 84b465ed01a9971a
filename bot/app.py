"""The FastAPI application factory, and its one error shape.

Every JSON error is ``{"detail": "<one sentence>"}``; a request that fails validation adds
``"errors"`` (each with ``loc`` and ``msg``). A dashboard route (any GET outside the API, the
webhooks and the probes) that names nothing (``/fixes/abc``, ``/no/such/page``) answers the
dashboard's own 404 page, not JSON. While the database is unavailable every route answers 503
with ``Retry-After`` (``bot.api.outage``), a page for the dashboard.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException as StarletteHTTPException

from bot.api import (
    buildkite_webhooks,
    ci_failures,
    fixes,
    gitlab_webhooks,
    health,
    metrics,
    webhooks,
)
from bot.api.body import BodyBudget
from bot.api.outage import counted_retry_after, unavailable_json
from bot.config import Settings, get_settings
from bot.dashboard.render import page
from bot.dashboard.routes import install as install_dashboard
from bot.db.models import utcnow
from bot.db.outage import API_UNAVAILABLE
from bot.queue.celery_app import configure_celery
from bot.version import __version__


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app; migrations and workers are started by the CLI, not here."""
    # Swagger UI and ReDoc from assets installed with the service, not a CDN: /docs works offline.
    app = FastAPIOffline(title="repairbot", version=__version__)
    app.state.settings = settings or get_settings()
    configure_celery(app.state.settings)
    # One per app: the bodies its routes are reading at once, all of them together.
    app.state.body_budget = BodyBudget(app.state.settings.max_buffered_body_bytes)
    for module in (
        health,
        webhooks,
        gitlab_webhooks,
        buildkite_webhooks,
        ci_failures,
        fixes,
        metrics,
    ):
        app.include_router(module.router)
    install_dashboard(app)
    install_error_handlers(app)
    return app


# Paths that answer machines: JSON errors there, always.
MACHINE_PREFIXES = (
    "/api/", "/webhooks", "/healthz", "/readyz", "/metrics", "/static/", "/static-offline-docs/",
    "/openapi.json",
)  # fmt: skip


def wants_page(request: Request) -> bool:
    """Whether ``request`` is for a dashboard page (a browser's GET of an HTML route)."""
    return request.method in ("GET", "HEAD") and not request.url.path.startswith(MACHINE_PREFIXES)


def _not_found_page(request: Request) -> Response:
    return page(
        request,
        "not_found.html",
        started=time.perf_counter(),
        status_code=status.HTTP_404_NOT_FOUND,
        now=utcnow(),
        what=f"page {request.url.path}",
    )


def _loc(loc: Any) -> str:
    return ".".join(str(part) for part in loc)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    if wants_page(request):
        return _not_found_page(request)
    errors = [{"loc": list(e["loc"]), "msg": str(e["msg"])} for e in exc.errors()]
    sentence = "; ".join(f"{_loc(e['loc'])}: {e['msg']}" for e in errors)
    return JSONResponse(
        {"detail": f"invalid request: {sentence}", "errors": errors},
        status_code=status.HTTP_422_UNPROCESSABLE_CONTENT,
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == status.HTTP_404_NOT_FOUND and wants_page(request):
        return _not_found_page(request)
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)


async def _database_unavailable(request: Request, exc: Exception) -> Response:
    """503 with Retry-After, for every route, while the database cannot be used."""
    if not wants_page(request):
        return unavailable_json(request, exc)
    answer = page(
        request,
        "unavailable.html",
        started=time.perf_counter(),
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        now=utcnow(),
    )
    answer.headers.update(counted_retry_after(request.app.state.settings))
    return answer


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error in the one shape (and dashboard 404s and 503s as pages)."""
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    for unavailable in API_UNAVAILABLE:
        app.add_exception_handler(unavailable, _database_unavailable)
