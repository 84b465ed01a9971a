"""Waiting for a started command, and stopping its tree on a timeout, a cancellation, or a limit
the kernel only counts.

The kernel enforces memory (the OOM killer), processes (forks refused) and the CPU quota by
itself. A ``Watch`` thread stops what it cannot: a tree that keeps forking at its process limit,
one past its CPU time, one whose run dir grew past its disk budget. Whatever ended a command,
``hits_of`` names the limits it reached.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from fixers.sandbox.cgroups import TreeGroup, Usage
from fixers.sandbox.disk import tally, usage
from fixers.sandbox.limits import (
    CPU,
    DISK,
    MEMORY,
    PROCESSES,
    TIMEOUT,
    LimitHit,
    Limits,
    size_text,
)

POLL_S = 0.25  # how often a wait looks for a cancellation
# How often the watch reads the cgroup's counters (three small files) and may walk the run dir:
# what a tree can write between two walks is what it overshoots its disk budget by.
WATCH_S = 0.05
# A tree still refused forks this long after the first refusal is a fork bomb, not a test that
# met the limit once: it is stopped rather than left spinning until the timeout.
FORK_GRACE_S = 5.0
WALK_SHARE = 20  # the disk walk runs at most 1/20 of the time: a huge run dir is walked less often


class Watch:
    """A thread that stops a command's tree once it passes a limit only counted by the kernel
    (``hit`` then says which). Made before the command starts: the run dir's size then is what
    its growth is measured from."""

    process: subprocess.Popen[bytes] | None = None

    def __init__(self, group: TreeGroup | None, limits: Limits, run_dir: Path) -> None:
        self.group, self.limits, self.run_dir = group, limits, run_dir
        self.hit: LimitHit | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sandbox-watch", daemon=True)
        self._baseline = usage(run_dir) if limits.max_disk_bytes is not None else 0
        self._next_walk = 0.0
        self._refused = 0
        self._refusing_since: float | None = None

    def start(self, process: subprocess.Popen[bytes]) -> Watch:
        """Start watching ``process`` (every ``WATCH_S``)."""
        self.process = process
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching (safe to call twice)."""
        self._stopping.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        while not self._stopping.wait(WATCH_S):
            hit = self.check(time.monotonic())
            if hit is not None:
                self.hit = hit
                self._kill()
                return

    def _kill(self) -> None:
        if self.group is not None:
            self.group.kill_all()
        elif self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)

    def check(self, now: float) -> LimitHit | None:
        """The limit the tree is past now, if any."""
        if self.group is not None:
            counted = self.group.usage()
            hit = self._forking(counted, now) or self._cpu(counted)
            if hit is not None:
                return hit
        return self._disk(now)

    def _forking(self, counted: Usage, now: float) -> LimitHit | None:
        still = counted.refused_forks > self._refused
        self._refused = counted.refused_forks
        if not still:
            return None
        if self._refusing_since is None:
            self._refusing_since = now
            return None
        if now - self._refusing_since < FORK_GRACE_S:
            return None
        return LimitHit(
            PROCESSES,
            f"kept forking at its limit of {self.limits.max_processes} processes "
            f"({counted.refused_forks} forks refused): stopped",
        )

    def _cpu(self, counted: Usage) -> LimitHit | None:
        budget = self.limits.max_cpu_s
        if budget is None or counted.cpu_s < budget:
            return None
        return LimitHit(
            CPU, f"used {counted.cpu_s:.1f} s of CPU time, past its limit of {budget} s: stopped"
        )

    def final(self) -> LimitHit | None:
        """Once the command ended: what stopped it, else what its run dir shows now (a short
        command may end before the first poll)."""
        return self.hit or self._disk(time.monotonic(), stopped=False)

    def _disk(self, now: float, *, stopped: bool = True) -> LimitHit | None:
        budget = self.limits.max_disk_bytes
        if budget is None or (stopped and now < self._next_walk):  # walked at most so often
            return None
        seen = tally(self.run_dir, stop_above=self._baseline + budget)
        self._next_walk = now + max(WATCH_S, WALK_SHARE * (time.monotonic() - now))
        grown, ending = seen.bytes - self._baseline, ": stopped" if stopped else ""
        if grown > budget:
            return LimitHit(
                DISK,
                f"grew its run dir past the limit of {size_text(budget)} "
                f"(by {size_text(grown)} when seen){ending}",
            )
        if seen.largest >= self.limits.max_file_bytes:
            size = size_text(self.limits.max_file_bytes)
            return LimitHit(DISK, f"wrote a file up to the limit of {size}{ending}")
        return None


def _signal_of(returncode: int | None) -> int | None:
    """The signal that ended a command: negative from Popen, 128 + n through bubblewrap."""
    if returncode is None:
        return None
    if returncode < 0:
        return -returncode
    return returncode - 128 if 128 < returncode < 128 + 65 else None


def hits_of(
    watched: LimitHit | None,
    timed_out: bool,
    counted: Usage | None,
    returncode: int | None,
    limits: Limits,
) -> tuple[LimitHit, ...]:
    """Every limit a command reached, what stopped it first (pure). ``counted``: its cgroup's
    counters (None without one)."""
    hits = [watched] if watched is not None else []
    if timed_out:
        hits.append(LimitHit(TIMEOUT, f"was still running after {limits.timeout_s:g} s: stopped"))
    if counted is not None and counted.oom_kills:
        memory = size_text(limits.max_memory_bytes or 0)
        hits.append(
            LimitHit(MEMORY, f"reached its memory limit of {memory}: the kernel killed "
                             f"{counted.oom_kills} process(es)")
        )  # fmt: skip
    if counted is not None and counted.refused_forks:
        hits.append(
            LimitHit(PROCESSES, f"reached its limit of {limits.max_processes} processes "
                                f"({counted.refused_forks} forks refused)")
        )  # fmt: skip
    ended_by = _signal_of(returncode)
    if ended_by == signal.SIGXCPU:
        hits.append(LimitHit(CPU, f"had a process use up its {limits.cpu_seconds()} s of CPU time"))
    if ended_by == signal.SIGXFSZ:
        hits.append(
            LimitHit(DISK, f"wrote a file up to the limit of {size_text(limits.max_file_bytes)}")
        )
    first: dict[str, LimitHit] = {}
    for hit in hits:
        first.setdefault(hit.name, hit)
    return tuple(first.values())


def log_lines(hits: tuple[LimitHit, ...], strays: int) -> str:
    """What the log says after a command's output about the limits it reached (pure)."""
    lines = [f"[sandbox] limit hit ({hit.name}): the process tree {hit.detail}\n" for hit in hits]
    if strays:
        lines.append(f"[sandbox] {strays} process(es) still in its cgroup at the end: killed\n")
    return "".join(lines)


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the whole process group, then SIGKILL what is left after a grace period.

    Inside bubblewrap the target is in its own pid namespace: when bubblewrap dies the kernel
    kills every process in that namespace, including ones that left the process group (and the
    cgroup, where there is one, catches the rest).
    """
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # stragglers that ignored SIGTERM


def wait_for(
    process: subprocess.Popen[bytes],
    began: float,
    timeout_s: float,
    should_cancel: Callable[[], bool],
) -> tuple[int | None, bool, bool]:
    """Wait for ``process``, killing its tree on timeout or cancellation.

    Returns at once when it exits (``wait`` with a timeout, no sleep between checks);
    cancellation is checked every ``POLL_S``. Returns (returncode, timed_out, cancelled).
    """
    timed_out = cancelled = False
    while True:
        remaining = timeout_s - (time.monotonic() - began)
        if remaining <= 0:
            timed_out = True
        elif should_cancel():
            cancelled = True
        if timed_out or cancelled:
            kill_group(process)
            break
        try:
            process.wait(timeout=min(POLL_S, remaining))
            break
        except subprocess.TimeoutExpired:
            continue
    return process.wait(), timed_out, cancelled
