"""Which limits a command reached, from how it ended and what its cgroup counted (pure).

The watch thread itself runs against real cgroups in ``test_launch_tree_limits.py``.
"""

from __future__ import annotations

import signal

from fixers.sandbox.cgroups import Usage
from fixers.sandbox.limits import CPU, DISK, MEMORY, PROCESSES, TIMEOUT, LimitHit, Limits
from fixers.sandbox.watch import hits_of, log_lines

LIMITS = Limits(timeout_s=20, max_memory_bytes=256 << 20, max_processes=64, max_cpu_s=9)


def _names(*args: object) -> list[str]:
    return [hit.name for hit in hits_of(*args)]  # type: ignore[arg-type]


def test_a_clean_exit_hit_nothing() -> None:
    assert hits_of(None, False, Usage(cpu_s=3.0), 0, LIMITS) == ()
    assert hits_of(None, False, None, 1, LIMITS) == ()  # a failing test is no limit


def test_what_the_cgroup_counted_is_named_with_its_figures() -> None:
    hits = hits_of(None, False, Usage(oom_kills=2, refused_forks=5), 137, LIMITS)
    assert [hit.name for hit in hits] == [MEMORY, PROCESSES]
    assert hits[0].detail == "reached its memory limit of 256 MiB: the kernel killed 2 process(es)"
    assert hits[1].detail == "reached its limit of 64 processes (5 forks refused)"


def test_what_stopped_it_comes_first_and_each_limit_once() -> None:
    stopped = LimitHit(PROCESSES, "kept forking at its limit of 64 processes: stopped")
    hits = hits_of(stopped, False, Usage(refused_forks=900), -9, LIMITS)
    assert hits == (stopped,)
    assert _names(None, True, Usage(oom_kills=1), None, LIMITS) == [TIMEOUT, MEMORY]


def test_rlimit_signals_name_cpu_time_and_file_size_through_bubblewrap_or_not() -> None:
    for code in (-signal.SIGXCPU, 128 + signal.SIGXCPU):
        assert _names(None, False, None, code, LIMITS) == [CPU]
    for code in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ):
        assert _names(None, False, None, code, LIMITS) == [DISK]
    assert _names(None, False, None, 128 + signal.SIGKILL, LIMITS) == []  # says nothing alone
    assert _names(None, False, None, 2, LIMITS) == []


def test_the_log_ends_with_what_stopped_the_tree() -> None:
    hits = hits_of(None, True, Usage(oom_kills=1), None, LIMITS)
    assert log_lines(hits, 2) == (
        "[sandbox] limit hit (timeout): the process tree was still running after 20 s: stopped\n"
        "[sandbox] limit hit (memory): the process tree reached its memory limit of 256 MiB: "
        "the kernel killed 1 process(es)\n"
        "[sandbox] 2 process(es) still in its cgroup at the end: killed\n"
    )
    assert log_lines((), 0) == ""
