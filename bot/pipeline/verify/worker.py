"""The embedded default's verification process: a solo Celery worker for the verification queues.

Started (and restarted) by ``repairbot serve`` (``bot.pipeline.embedded.VerificationWorker``) as
``python -m bot.pipeline.verify.worker --queues cpu,gpu.any --parent PID``. It prunes what a killed
predecessor left, then consumes; it exits when its parent is gone, so an API killed with
SIGKILL leaves no verification process behind (the sandbox then ends the tests it ran).
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Sequence

from bot.config import get_settings
from bot.pipeline.embedded import quiet_solo_worker
from bot.pipeline.reconcile.cleanup import prune_stale_work
from bot.queue.celery_app import configure_tasks

PARENT_POLL_S = 1.0


def watch_parent(parent_pid: int, *, poll_s: float = PARENT_POLL_S) -> threading.Thread:
    """Exit this process at once when ``parent_pid`` is no longer its parent (it died)."""

    def loop() -> None:
        while os.getppid() == parent_pid:
            time.sleep(poll_s)
        os._exit(1)  # no cleanup to wait for: leases and heartbeats end with the process

    thread = threading.Thread(target=loop, name="repairbot-parent-watch", daemon=True)
    thread.start()
    return thread


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """``--queues a,b`` and ``--parent PID``."""
    parser = argparse.ArgumentParser(prog="python -m bot.pipeline.verify.worker")
    parser.add_argument("--queues", required=True, help="comma-separated queues")
    parser.add_argument("--parent", type=int, required=True, help="exit when this process dies")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Prune stale run dirs, then consume verifications until shut down; returns the exit code."""
    args = parse_args(argv)
    watch_parent(args.parent)
    settings = get_settings()  # this process's own: it reads the environment it was started in
    prune_stale_work(settings)
    configure_tasks(settings)
    queues = [queue for queue in args.queues.split(",") if queue]
    worker = quiet_solo_worker(queues, hostname="verify@%h")
    worker.start()
    return int(worker.exitcode or 0)


if __name__ == "__main__":
    raise SystemExit(main())
