"""``repairbot worker``: a scaled-out Celery worker (repair queue, or a GPU queue)."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add ``worker`` to the application."""
    app.command("worker")(worker)


def worker(
    queues: Annotated[
        str, typer.Option("-Q", "--queues", help="Comma-separated queues")
    ] = "repair",
    concurrency: Annotated[int, typer.Option("-c", "--concurrency", help="Worker processes")] = 1,
    hostname: Annotated[str | None, typer.Option("-n", "--hostname", help="Node name")] = None,
) -> None:
    """Run a Celery worker against the configured broker and database."""
    from bot.config import get_settings
    from bot.db.migrate import upgrade_when_reachable
    from bot.pipeline.reconcile.cleanup import prune_stale_work
    from bot.queue.celery_app import app as celery_app
    from bot.queue.celery_app import configure_tasks, quiet_root_warning
    from bot.runner.sandbox import sandbox_note

    settings = get_settings()
    upgrade_when_reachable(settings.resolved_database_url)
    prune_stale_work(settings)  # worktrees a killed worker left on this host; live ones are leased
    configure_tasks(settings)  # the worker's tasks read these settings, on their broker
    root_note = quiet_root_warning()
    if root_note:
        typer.echo(f"note: {root_note}", err=True)
    typer.echo(f"note: {sandbox_note(settings)}", err=True)  # where target code runs, and how
    argv = [
        "worker",
        "-Q",
        queues,
        "-c",
        str(concurrency),
        "--loglevel",
        "INFO",
        "--pool",
        "solo" if concurrency == 1 else "prefork",
        "--without-gossip",
        "--without-mingle",
    ]
    if hostname:
        argv += ["-n", hostname]
    celery_app.worker_main(argv)
