"""A running job's sign of life: a daemon thread that calls ``beat`` until the job ends.

A thread, not the test loop, beats: it keeps beating while the job clones, probes the device or
waits on a test, and it dies with the process — which is the point: a worker killed with
SIGKILL stops beating, and the reconciler sees the silence.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


@dataclass
class Heartbeat:
    """``lost`` is set once ``beat`` answered False: the job is no longer ours to finish."""

    beat: Callable[[], bool]
    interval_s: float
    lost: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        """Beat every ``interval_s`` until stopped or lost (a failed beat is retried next time)."""
        while not self._stop.wait(self.interval_s):
            try:
                if not self.beat():
                    self.lost.set()
                    return
            except Exception:  # a locked or unreachable database: the next beat may get through
                log.warning("heartbeat failed", exc_info=True)

    def stop(self) -> None:
        """End the thread at its next wake-up."""
        self._stop.set()


@contextlib.contextmanager
def beating(beat: Callable[[], bool], *, interval_s: float, name: str) -> Iterator[Heartbeat]:
    """Run a :class:`Heartbeat` in a daemon thread for the duration of the block."""
    heartbeat = Heartbeat(beat, interval_s)
    thread = threading.Thread(target=heartbeat.run, name=name, daemon=True)
    thread.start()
    try:
        yield heartbeat
    finally:
        heartbeat.stop()
