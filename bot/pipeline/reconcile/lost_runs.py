"""Repair runs whose worker was lost: re-send once more, or stop when it keeps dying in one place.

The reconciler counts a run that made no progress for ``stale_after_s`` as lost (its worker
died, or its message did). One loss is re-sent: a ``kill -9`` in the middle of a repair must not
lose it. But a repair that exhausts the worker's memory is killed every time at the same step,
and re-sending it only kills the next worker (a crash loop). So each re-send is recorded on the
run (its reason and timeline), and when the attempt that followed a re-send is lost in the same
state again, the run fails with that reason instead of being re-sent into the same failure.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from bot.db.models import RepairRun, RunState
from bot.runner.workdirs import LEASE_SUFFIX

RESENT = "re-sent: attempt "


def resent_reason(attempt: int, state: str) -> str:
    """The reason recorded on a run when the reconciler re-sends it after ``attempt`` was lost."""
    return f"{RESENT}{attempt} made no progress in state {state} (its worker was lost?)"


def lost_again(run: RepairRun) -> str | None:
    """Why ``run`` must fail rather than be re-sent (None: re-send it).

    True when the reconciler last re-sent it after attempt N-1 was lost in some state, attempt
    N did start (the attempt counter moved on), and N is now lost in that same state.
    """
    if run.attempts < 2:
        return None
    last = next((t.reason for t in reversed(run.transitions) if t.reason.startswith(RESENT)), None)
    if last != resent_reason(run.attempts - 1, run.state):
        return None
    return (
        f"attempts {run.attempts - 1} and {run.attempts} were both lost in state {run.state} "
        "(the worker was killed, e.g. for exceeding its memory): not retried"
    )


def no_more_attempts(
    run: RepairRun, worktrees_dir: Path, max_attempts: int
) -> tuple[RunState, str] | None:
    """The final state and reason for a run that must not start again (None: start it).

    Checked by the repair itself at each start, so it also holds when the broker redelivers
    the message of a killed worker directly, without the reconciler.
    """
    if run.attempts >= max_attempts:
        return RunState.ERROR, f"gave up after {run.attempts} attempts"
    dead = len(abandoned_leases(worktrees_dir, run.id))
    if dead >= 2:
        return RunState.FAILED, (
            f"{dead} attempts were killed while they worked on it (e.g. for exceeding the "
            "worker's memory): not retried"
        )
    return None


def abandoned_leases(worktrees_dir: Path, run_id: int) -> list[Path]:
    """Worktree leases of ``run_id`` that no process holds: attempts killed on this host.

    A lease is unlinked when its attempt ends in any normal way, and a worker's start prunes
    what killed ones left (``bot.pipeline.reconcile.cleanup``), so these are the deaths since then.
    """
    return [lease for lease in _leases(worktrees_dir, run_id) if not _held(lease)]


def attempt_alive(worktrees_dir: Path, run_id: int) -> bool:
    """Whether a process on this host still works on ``run_id``: it holds its worktree's lease.

    A repair holds an exclusive ``flock`` on ``run-<id>-<n>.lease`` while it works in the
    worktree (``bot.runner.workdirs``), and the kernel drops it when the process dies. A slow but
    living attempt is therefore never taken for a lost one here; on another host this cannot be
    seen, and staleness alone decides.
    """
    return any(_held(lease) for lease in _leases(worktrees_dir, run_id))


def _leases(worktrees_dir: Path, run_id: int) -> list[Path]:
    return sorted(worktrees_dir.glob(f"run-{run_id}-*{LEASE_SUFFIX}"))


def _held(lease: Path) -> bool:
    """Whether some process holds ``lease``'s flock (a vanished file counts as held: its
    attempt ended normally, it was not abandoned)."""
    try:
        fd = os.open(lease, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops our own shared lock, if we got it
    return False
