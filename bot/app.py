"""The FastAPI application factory."""

from __future__ import annotations

from fastapi import FastAPI

from bot.api import ci_failures, fixes, health, metrics, webhooks
from bot.api.body import BodyBudget
from bot.config import Settings, get_settings
from bot.dashboard.routes import install as install_dashboard
from bot.queue.celery_app import configure_celery
from bot.version import __version__


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app; migrations and workers are started by the CLI, not here."""
    app = FastAPI(title="repairbot", version=__version__)
    app.state.settings = settings or get_settings()
    configure_celery(app.state.settings)
    # One per app: the bodies its routes are reading at once, all of them together.
    app.state.body_budget = BodyBudget(app.state.settings.max_buffered_body_bytes)
    for module in (health, webhooks, ci_failures, fixes, metrics):
        app.include_router(module.router)
    install_dashboard(app)
    return app
