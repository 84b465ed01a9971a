"""Limits as numbers: the operator's ceiling, their words, and the rlimits kept with a cgroup."""

from __future__ import annotations

import resource

from fixers.sandbox.limits import (
    GIB,
    MIB,
    Limits,
    narrowed,
    rlimit_table,
    size_text,
    tree_isolation,
    tree_summary,
)


def test_a_ceiling_narrows_every_resource_but_keeps_the_commands_timeout() -> None:
    command = Limits(timeout_s=120, max_memory_bytes=8 * GIB, max_processes=None, max_cpu_s=240)
    ceiling = Limits(timeout_s=5, max_memory_bytes=GIB, max_processes=64, cpus=1.5)
    got = narrowed(command, ceiling)
    assert got.timeout_s == 120
    assert got.max_memory_bytes == GIB  # the smaller of the two
    assert got.max_processes == 64  # unlimited by the command: the ceiling's
    assert got.max_cpu_s == 240  # the ceiling leaves it unlimited: the command's
    assert got.cpus == 1.5
    assert narrowed(command, None) is command


def test_sizes_and_tree_limits_read_as_people_write_them() -> None:
    assert size_text(256 * MIB) == "256 MiB"
    assert size_text(16 * GIB) == "16 GiB"
    assert size_text(1536 * MIB) == "1.5 GiB"
    assert size_text(140 * MIB + 4096) == "140 MiB"
    assert size_text(100) == "100 bytes"
    limits = Limits(max_memory_bytes=256 * MIB, max_processes=64, cpus=0.5, max_cpu_s=30)
    assert tree_summary(limits) == "memory 256 MiB, 64 processes, 0.5 CPU, CPU time 30 s"
    assert tree_summary(Limits(max_memory_bytes=None, max_processes=None)) == "no tree limits set"


def test_with_a_cgroup_memory_and_processes_are_left_to_it() -> None:
    """RLIMIT_NPROC counts every sandbox of the host together (they share one user), and an
    address-space cap refuses what a cgroup would allow: with a cgroup both are left out."""
    alone = {which for which, _, _ in rlimit_table(Limits(), gpu=False)}
    in_cgroup = {which for which, _, _ in rlimit_table(Limits(), gpu=False, tree=True)}
    assert {resource.RLIMIT_AS, resource.RLIMIT_NPROC} <= alone
    assert not {resource.RLIMIT_AS, resource.RLIMIT_DATA, resource.RLIMIT_NPROC} & in_cgroup
    assert {resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_CORE} <= in_cgroup


def test_cpu_time_is_soft_one_second_below_hard_so_sigxcpu_names_it() -> None:
    table = {
        which: (soft, hard) for which, soft, hard in rlimit_table(Limits(max_cpu_s=7), gpu=False)
    }
    assert table[resource.RLIMIT_CPU] == (7, 8)
    assert table[resource.RLIMIT_FSIZE][0] == table[resource.RLIMIT_FSIZE][1]


def test_the_isolation_says_what_bounds_the_tree_and_where_a_gpu_host_falls_short() -> None:
    """Seen on a GPU runner whose cgroup had no pids or cpu delegated: without a cgroup, a GPU
    host caps memory as data only, and the verdict must not claim more."""
    limits = Limits(max_memory_bytes=GIB, max_disk_bytes=2 * GIB)
    assert tree_isolation(limits, 2).startswith("whole tree in a cgroup v2 of its own (memory 1")
    assert tree_isolation(limits, 2).endswith("; run dir growth up to 2 GiB")
    why = "cgroup v2: pids, cpu not available in /sys/fs/cgroup/x"
    on_cpu = tree_isolation(limits, None, why)
    on_gpu = tree_isolation(limits, None, why, gpu=True)
    assert on_cpu.startswith("per-process rlimits (memory, processes") and why in on_cpu
    assert "shared mappings unbounded with GPU devices exposed" in on_gpu and why in on_gpu
    assert "shared mappings" not in on_cpu
