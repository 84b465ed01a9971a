"""The embedded default: a Celery worker and the reconciler as daemon threads of the API process."""

from __future__ import annotations

import logging
import threading

from bot.config import Settings
from bot.tasks.celery_app import app as celery_app
from bot.tasks.celery_app import configure_celery
from bot.tasks.reconcile import reconcile_once

log = logging.getLogger(__name__)


def start_embedded_worker(settings: Settings) -> threading.Thread:
    """A Celery worker consuming the repair queue in a daemon thread of this process."""
    configure_celery(settings)
    worker = celery_app.Worker(
        pool="solo",
        queues=settings.worker_queues,
        loglevel="WARNING",
        redirect_stdouts=False,
        quiet=True,
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
    )
    thread = threading.Thread(target=worker.start, name="repairbot-worker", daemon=True)
    thread.start()
    return thread


def start_reconciler(settings: Settings, stop: threading.Event) -> threading.Thread:
    """Re-enqueue stale work every ``reconcile_interval_s`` seconds until ``stop`` is set."""

    def loop() -> None:
        while not stop.wait(settings.reconcile_interval_s):
            try:
                reconcile_once(settings)
            except Exception:  # one failed pass must not end reconciling
                log.exception("reconciler pass failed")

    thread = threading.Thread(target=loop, name="repairbot-reconciler", daemon=True)
    thread.start()
    return thread
