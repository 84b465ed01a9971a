"""The Celery application. Configuration is read lazily from ``bot.tasks.celeryconfig``."""

from __future__ import annotations

from celery import Celery

from bot.config import Settings
from bot.tasks import file_broker

file_broker.register()

app = Celery(
    "repairbot",
    include=[
        "bot.tasks.triage",
        "bot.tasks.repair",
        "bot.tasks.verify",
        "bot.tasks.report",
        "bot.tasks.deliveries",
        "bot.tasks.reconcile",
    ],
)
app.config_from_object("bot.tasks.celeryconfig")


def configure_celery(settings: Settings) -> Celery:
    """Point the app at ``settings``' broker (for processes built from explicit settings)."""
    url, options = settings.resolved_broker_url, settings.broker_transport_options
    if app.conf.broker_url == url and app.conf.broker_transport_options == options:
        return app
    app.conf.broker_url = url
    app.conf.broker_transport_options = options
    # Connection and producer pools are bound to the broker they were made for; Celery's own
    # after-fork reset is the supported way to drop them.
    app._after_fork()
    return app
