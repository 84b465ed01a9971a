"""Sends to a broker that is down: bounded, counted, and paused for a while after a failure.

A send to a stopped Redis fails in well under a second once Celery's publish retries are
bounded (``broker_publish_retries``), but every request that stores work would still pay it.
After one failure this process skips sends for ``broker_pause_after_failure_s``: the rows are
stored (the truth), and the reconciler sends them once the broker is back. The counts are this
process's (``repairbot_broker_send_failures_total`` in /metrics).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field


@dataclass
class SendBreaker:
    """Whether sends are paused, and how many tasks were not sent because the broker was down."""

    pause_s: float = 5.0
    failures: int = 0  # tasks not sent: the send failed, or was skipped during a pause
    _paused_until: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def paused(self) -> bool:
        """Whether sends are skipped now (a send failed less than ``pause_s`` ago)."""
        return time.monotonic() < self._paused_until

    def skipped(self, tasks: int) -> None:
        """Count ``tasks`` not sent because sends are paused."""
        with self._lock:
            self.failures += tasks

    def failed(self, tasks: int) -> None:
        """Count ``tasks`` whose send failed, and pause sends."""
        with self._lock:
            self.failures += tasks
            self._paused_until = time.monotonic() + self.pause_s

    def reset(self) -> None:
        """Resume sending at once (a send went through, or a test starts afresh)."""
        self._paused_until = 0.0


BREAKER = SendBreaker()
"""The process's breaker: ``bot.queue.enqueue`` consults it, ``configure_celery`` sets its pause."""
