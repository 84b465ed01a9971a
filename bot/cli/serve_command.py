"""``repairbot serve``: the API with an in-process worker and reconciler (the embedded default)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

if TYPE_CHECKING:
    from bot.config import Settings


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the application."""
    app.command("serve")(serve)


def _settings_for(host: str, port: int, worker: bool) -> Settings:
    """The settings, with links naming where this process serves; then Celery's root warning
    as one note (once the settings are known to be good)."""
    from bot.config import get_settings
    from bot.queue.celery_app import quiet_root_warning

    _link_to_here(host, port)
    settings = get_settings()
    root_note = quiet_root_warning()
    if root_note and worker:
        Console(stderr=True, emoji=False, soft_wrap=True).print(f"note: {root_note}")
    return settings


def _link_to_here(host: str, port: int) -> None:
    """Links to fix pages name where this process serves, in its threads and its children
    (which read the same environment), unless an operator configured a public address."""
    if "REPAIRBOT_PUBLIC_URL" not in os.environ:
        shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        shown = f"[{shown}]" if ":" in shown else shown
        os.environ["REPAIRBOT_PUBLIC_URL"] = f"http://{shown}:{port}"


def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on")] = 8000,
    worker: Annotated[
        bool, typer.Option("--worker/--no-worker", help="Run the in-process worker")
    ] = True,
) -> None:
    """Serve the webhook API; by default also run the worker and reconciler in this process."""
    import threading

    import uvicorn

    from bot.api.slow_clients import header_deadline_protocol
    from bot.app import create_app
    from bot.db.migrate import upgrade_when_reachable
    from bot.pipeline.embedded import (
        VerificationWorker,
        split_queues,
        start_embedded_worker,
        start_reconciler,
    )
    from bot.pipeline.reconcile.cleanup import prune_stale_work
    from bot.queue.celery_app import configure_tasks

    settings = _settings_for(host, port, worker)
    upgrade_when_reachable(settings.resolved_database_url)
    configure_tasks(settings)  # tasks run in this process (the embedded worker) read these
    stop = threading.Event()
    embedded = worker and settings.embedded_worker
    verifier: VerificationWorker | None = None
    if embedded:
        prune_stale_work(settings)  # what a killed predecessor left; live runs are leased
        in_thread, verifying = split_queues(settings)
        if in_thread:
            start_embedded_worker(settings, in_thread)
        if verifying:  # its own process: a hanging test must not stall repairs
            verifier = VerificationWorker(verifying).start()
    start_reconciler(settings, stop)
    Console(stderr=True, emoji=False, soft_wrap=True).print(
        f"repairbot serving on http://{host}:{port} (database {settings.resolved_database_url}, "
        f"broker {settings.resolved_broker_url}, worker {'in-process' if embedded else 'external'}"
        f"{', verification in a child process' if verifier else ''})"
    )
    api = create_app(settings)
    _freeze_startup_objects()
    _exit_through_cleanup_on_sigterm()
    try:
        uvicorn.run(
            api,
            host=host,
            port=port,
            log_level="warning",
            http=header_deadline_protocol(settings.read_timeout_s),
        )
    finally:
        stop.set()
        if verifier is not None:
            verifier.stop()


def _exit_through_cleanup_on_sigterm() -> None:
    """Make SIGTERM (``docker stop``, systemd, Kubernetes) end the process with ``SystemExit``.

    uvicorn shuts down gracefully on SIGTERM, then raises it again with the handler it found.
    With Python's default one the process died right there, before this command's ``finally``
    and the ``atexit`` hooks: every restart left the spare import checks' run folders in the
    system temp dir and their sandboxes to die with the parent. Exit status 143 (128 + 15), as a
    shell reports a process SIGTERM ended.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return  # signals reach the main thread only; uvicorn then handles none either

    def exit_process(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, exit_process)


def _freeze_startup_objects() -> None:
    """Move everything loaded so far (modules, libcst, Celery, the app) out of the collector's
    reach: it lives as long as the process. Measured under load: without this, full
    collections that find nothing paused every request for 100-300 ms. The youngest
    generation is collected every 20,000 allocations rather than 700: a request allocates
    hundreds of short-lived objects (profiled under bench/webhooks.py's load: roughly 8% less
    CPU per delivery, within that machine's noise of about 10%)."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 50, 100)
