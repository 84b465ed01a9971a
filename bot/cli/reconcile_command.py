"""``repairbot reconcile``: re-send what a crash left unfinished (once, or as a loop: ``beat``)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console


def register(app: typer.Typer) -> None:
    """Add ``reconcile`` to the application."""
    app.command("reconcile")(reconcile)


def reconcile(
    loop: Annotated[bool, typer.Option("--loop", help="Keep reconciling every interval")] = False,
) -> None:
    """Re-enqueue stale repair runs, unclassified reports and unclaimed or lost verifications."""
    import logging
    import threading

    from bot.config import get_settings
    from bot.db.migrate import upgrade_when_reachable
    from bot.pipeline.reconcile.task import reconcile_once
    from bot.queue.celery_app import configure_celery

    settings = get_settings()
    upgrade_when_reachable(settings.resolved_database_url)
    configure_celery(settings)
    console = Console(stderr=True, emoji=False)
    stop = threading.Event()
    while True:
        try:
            sent = reconcile_once(settings)
        except Exception:
            if not loop:
                raise
            # The database or the broker is down (restarting, say): the next pass retries.
            logging.getLogger(__name__).exception("reconciler pass failed")
        else:
            console.print(f"reconciled: {sent} task(s) re-sent")
        if not loop or stop.wait(settings.reconcile_interval_s):
            return
