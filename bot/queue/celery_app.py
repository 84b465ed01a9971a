"""The Celery application. Configuration is read lazily from ``bot.queue.celeryconfig``.

A process that runs tasks says which settings they read with :func:`configure_tasks` (the
embedded worker, ``repairbot worker``, the verification process, ``repairbot serve``); the
settings ride on the app's configuration, and a process that never configured its tasks gets
the environment's (``bot.config.get_settings``).
"""

from __future__ import annotations

import os
import warnings

from celery import Celery
from celery.exceptions import SecurityWarning

from bot.config import Settings, get_settings
from bot.queue import file_broker
from bot.queue.breaker import BREAKER

file_broker.register()

TASK_SETTINGS = "repairbot_settings"  # the app.conf key that holds the tasks' settings
# Every module that defines a task, for the worker to import at start (a test keeps this list
# equal to the modules whose functions wear ``@app.task(``: a new one that is not here fails).
TASK_MODULES = (
    "bot.intake.process_delivery",
    "bot.pipeline.buildkite_rebuild",
    "bot.pipeline.contract_check.task",
    "bot.pipeline.contract_check.triggers",
    "bot.pipeline.dispatch",
    "bot.pipeline.fan_out.task",
    "bot.pipeline.github_send",
    "bot.pipeline.merge_outcome",
    "bot.pipeline.reconcile.task",
    "bot.pipeline.repair.apply_fix",
    "bot.pipeline.repair.task",
    "bot.pipeline.triage",
    "bot.pipeline.verify.announce",
    "bot.pipeline.verify.task",
)


app = Celery("repairbot", include=TASK_MODULES)
app.config_from_object("bot.queue.celeryconfig")


ROOT_NOTE = (
    "running as root: Celery's workers warn about superuser privileges; repairbot runs target "
    "code only in its sandbox (bubblewrap, as nobody, without network or the data dir), which "
    "holds as root, so that warning is not repeated"
)


def quiet_root_warning() -> str | None:
    """Celery warns on every worker start as root (each embedded worker, each child): the
    process says why once instead (``ROOT_NOTE``, returned when running as root)."""
    warnings.filterwarnings("ignore", category=SecurityWarning, message=".*superuser privileges")
    return ROOT_NOTE if os.geteuid() == 0 else None


def configure_celery(settings: Settings) -> Celery:
    """Point the app at ``settings``' broker (for processes built from explicit settings)."""
    quiet_root_warning()
    _bound_sends(settings)
    url, options = settings.resolved_broker_url, settings.broker_transport_options
    if app.conf.broker_url == url and app.conf.broker_transport_options == options:
        return app
    app.conf.broker_url = url
    app.conf.broker_transport_options = options
    BREAKER.reset()  # a pause after failed sends was about the broker before this one
    # Connection and producer pools are bound to the broker they were made for; Celery's own
    # after-fork reset is the supported way to drop them.
    app._after_fork()
    return app


def _bound_sends(settings: Settings) -> None:
    """A send to a broker that is down fails within about a second, then sends pause a while
    (``bot.queue.breaker``), instead of each request waiting out Celery's retries."""
    app.conf.broker_connection_timeout = settings.broker_connect_timeout_s
    app.conf.task_publish_retry_policy = {
        "max_retries": settings.broker_publish_retries,
        "interval_start": 0,
        "interval_step": 0.2,
        "interval_max": 0.2,
    }
    BREAKER.pause_s = settings.broker_pause_after_failure_s


def configure_tasks(settings: Settings) -> Celery:
    """Make this process's tasks read ``settings`` and send on their broker; returns the app.

    Called by whoever builds a worker, before it consumes. Calling it again replaces the settings.
    """
    app.conf[TASK_SETTINGS] = settings
    return configure_celery(settings)


def unconfigure_tasks() -> None:
    """Forget the settings :func:`configure_tasks` gave: tasks read the environment's again."""
    app.conf[TASK_SETTINGS] = None


def task_settings() -> Settings:
    """The settings tasks read: those given to :func:`configure_tasks`, else the environment's."""
    configured = app.conf.get(TASK_SETTINGS)
    return configured if isinstance(configured, Settings) else get_settings()
