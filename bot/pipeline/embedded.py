"""The embedded default: workers and the reconciler that ``repairbot serve`` runs itself.

Two consumers, so that a verification that hangs (a target test that sleeps forever) never
holds up triage, repairs, deliveries and reports:

- a Celery worker thread in the API process for the ``repair`` queue;
- a separate process (``bot.pipeline.verify.worker``) for the verification queues (``cpu``,
  ``gpu.*``), restarted by a supervisor thread whenever it dies. A killed one stops its
  verification's heartbeat, and the reconciler queues that verification again.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.config import Settings
from bot.pipeline.reconcile.task import reconcile_once
from bot.pipeline.repair.import_spare import start_spares
from bot.queue import names as task_names
from bot.queue.celery_app import app as celery_app
from bot.queue.celery_app import configure_tasks

log = logging.getLogger(__name__)

RESTART_PAUSE_S = 1.0  # between a verification process's death and its replacement...
MAX_RESTART_PAUSE_S = 30.0  # ...growing to this while it keeps dying young (a crash loop)
HEALTHY_AFTER_S = 10.0
STOP_GRACE_S = 5.0  # SIGTERM, then SIGKILL: a hanging test must not hold the API's exit


def is_verification_queue(
    queue: str, *, default_queue: str, fallback_queues: Sequence[str]
) -> bool:
    """Whether ``queue`` carries verifications (``gpu.*``, the default and fallback queues).

    >>> is_verification_queue("gpu.H100_PCIe", default_queue="cpu", fallback_queues=["gpu.any"])
    True
    >>> is_verification_queue("repair", default_queue="cpu", fallback_queues=["gpu.any", "cpu"])
    False
    """
    return queue.startswith("gpu.") or queue == default_queue or queue in fallback_queues


def split_queues(settings: Settings) -> tuple[list[str], list[str]]:
    """The embedded worker's queues: (for the API process's thread, for the verification
    process)."""
    verifying = [
        queue
        for queue in settings.worker_queues
        if is_verification_queue(
            queue,
            default_queue=settings.verify_default_queue,
            fallback_queues=settings.verify_fallback_queues,
        )
    ]
    return [q for q in settings.worker_queues if q not in verifying], verifying


def quiet_solo_worker(queues: Sequence[str], **options: Any) -> Any:
    """A single-task Celery worker for ``queues`` that stays out of the process's output and
    needs no broker chatter (the embedded default's two workers)."""
    return celery_app.Worker(
        pool="solo",
        queues=list(queues),
        loglevel="WARNING",
        redirect_stdouts=False,
        quiet=True,
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
        **options,
    )


def start_embedded_worker(settings: Settings, queues: Sequence[str]) -> threading.Thread:
    """A Celery worker consuming ``queues`` in a daemon thread of this process; its tasks read
    ``settings``.

    When it takes repairs, that thread first starts the spare import checks for the first
    attempts (``bot.pipeline.repair.import_spare``): from the thread that runs the repairs, since a
    sandbox dies with the thread that started it.
    """
    configure_tasks(settings)
    worker = quiet_solo_worker(queues)

    def run() -> None:
        if task_names.REPAIR_QUEUE in queues:
            start_spares(settings)
        worker.start()

    thread = threading.Thread(target=run, name="repairbot-worker", daemon=True)
    thread.start()
    return thread


def restart_pause(lived_s: float, previous_s: float) -> float:
    """How long to wait before restarting a process that lived ``lived_s`` seconds.

    >>> restart_pause(3600, 8.0), restart_pause(2, 1.0), restart_pause(2, 20.0)
    (1.0, 2.0, 30.0)
    """
    if lived_s >= HEALTHY_AFTER_S:
        return RESTART_PAUSE_S
    return min(previous_s * 2, MAX_RESTART_PAUSE_S)


def verification_worker_command(queues: Sequence[str], parent_pid: int) -> list[str]:
    """The command line of the verification process (same interpreter, same environment)."""
    return [
        sys.executable,
        "-m",
        "bot.pipeline.verify.worker",
        "--queues",
        ",".join(queues),
        "--parent",
        str(parent_pid),
    ]


@dataclass
class VerificationWorker:
    """Keeps one verification process running until :meth:`stop`."""

    queues: list[str]
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _process: subprocess.Popen[bytes] | None = None
    _thread: threading.Thread | None = None

    def start(self) -> VerificationWorker:
        """Start the supervisor thread, which starts the process."""
        self._thread = threading.Thread(
            target=self._supervise, name="repairbot-verify-supervisor", daemon=True
        )
        self._thread.start()
        return self

    @property
    def pid(self) -> int | None:
        """The current verification process's id, if one runs."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def _supervise(self) -> None:
        command = verification_worker_command(self.queues, os.getpid())
        pause = RESTART_PAUSE_S / 2
        while not self._stop.is_set():
            with self._lock:
                if self._stop.is_set():
                    return
                started = time.monotonic()
                self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL)
            code = self._process.wait()
            if not self._stop.is_set():
                pause = restart_pause(time.monotonic() - started, pause)
                log.warning("verification worker exited (%s); another in %.0f s", code, pause)
                self._stop.wait(pause)

    def stop(self) -> None:
        """Stop supervising and end the process (SIGTERM, SIGKILL after a grace period)."""
        with self._lock:
            self._stop.set()
            process = self._process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_GRACE_S)


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
