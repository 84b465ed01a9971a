"""Resource limits for target processes: what one command may use, and which limit it hit.

Where the host lets the service make cgroups (``cgroups``), memory, processes and CPU time bound
the command's whole process tree, however it forks; otherwise they fall back to rlimits, applied
in the child before ``exec`` and inherited by everything it starts: per process (memory, CPU
time) or per sandbox user (processes: ``RLIMIT_NPROC`` counts every process and thread of the
user that runs the sandbox, which is why the sandbox runs as its own unprivileged user when the
service is root — the kernel never applies it to root). File size, open files and core dumps are
rlimits either way; the run dir's growth is watched (``watch``).
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

GIB = 1 << 30
MIB = 1 << 20

# The limits a command can hit, as results and verdicts name them.
MEMORY = "memory"
PROCESSES = "processes"
CPU = "cpu"
DISK = "disk"
TIMEOUT = "timeout"


@dataclass(frozen=True)
class Limits:
    """Resource limits for one command; ``None`` leaves that resource unlimited."""

    timeout_s: float = 1800.0
    max_file_bytes: int = 2 * GIB
    max_open_files: int = 4096
    max_memory_bytes: int | None = 16 * GIB  # the whole tree (cgroup), else each process
    max_processes: int | None = 1024  # the whole tree (cgroup), else the sandbox user's
    max_cpu_s: int | None = None  # CPU time: the whole tree's (cgroup) and each process's
    cpus: float | None = None  # a CPU quota in cores for the whole tree (cgroup only)
    max_disk_bytes: int | None = 8 * GIB  # how much the run dir may grow during the command

    def cpu_seconds(self) -> int:
        """CPU seconds per process: as given, else twice the wall-clock timeout.

        Twice, because a test that uses two cores for its whole timeout is normal; one that burns
        more than that is spinning, and the wall-clock timeout would stop the tree anyway.
        """
        return self.max_cpu_s if self.max_cpu_s is not None else int(2 * self.timeout_s) + 1


@dataclass(frozen=True)
class LimitHit:
    """A limit a command reached (``name``: one of MEMORY, PROCESSES, CPU, DISK, TIMEOUT);
    ``detail`` completes "the command's process tree ...": ``reached its memory limit of 256
    MiB: the kernel killed 1 process(es)``."""

    name: str
    detail: str


def narrowed(limits: Limits, ceiling: Limits | None) -> Limits:
    """``limits``, each resource no larger than ``ceiling``'s (the operator's settings); the
    timeout stays the command's own."""
    if ceiling is None:
        return limits
    changes: dict[str, Any] = {}
    for field in fields(Limits):
        mine, most = getattr(limits, field.name), getattr(ceiling, field.name)
        if field.name != "timeout_s" and most is not None:
            changes[field.name] = most if mine is None else min(mine, most)
    return replace(limits, **changes)


def size_text(count: int) -> str:
    """Bytes as people read them: ``256 MiB``, ``16 GiB``, ``1.5 GiB``, ``140 MiB``."""
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", 1 << 10)):
        if (count >= size and count % size == 0) or count >= 10 * size:
            return f"{round(count / size)} {unit}"
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} bytes"


def tree_summary(limits: Limits) -> str:
    """What bounds the whole tree, in words (``memory 256 MiB, 64 processes, 1 CPU``)."""
    parts = []
    if limits.max_memory_bytes is not None:
        parts.append(f"memory {size_text(limits.max_memory_bytes)}")
    if limits.max_processes is not None:
        parts.append(f"{limits.max_processes} processes")
    if limits.cpus is not None:
        parts.append(f"{limits.cpus:g} CPU")
    if limits.max_cpu_s is not None:
        parts.append(f"CPU time {limits.max_cpu_s} s")
    return ", ".join(parts) or "no tree limits set"


IN_CGROUP = "whole tree in a cgroup v{version} of its own ({tree}); rlimits: CPU time, file size"
PER_PROCESS = "per-process rlimits ({memory}, processes, CPU time, file size), no whole-tree limits"
# CUDA needs an uncapped address space, so with GPU devices memory is capped as data
# (``rlimit_table``), which leaves shared mappings out: only a cgroup bounds those.
GPU_MEMORY = "memory as data only: shared mappings unbounded with GPU devices exposed"


def tree_isolation(
    limits: Limits, cgroup_version: int | None, problem: str = "", *, gpu: bool = False
) -> str:
    """What bounds a command's tree, in words: its cgroup's limits, or (without one, for
    ``problem``) the per-process rlimits; then the run dir's budget."""
    budget = limits.max_disk_bytes
    disk = "" if budget is None else f"; run dir growth up to {size_text(budget)}"
    if cgroup_version is not None:
        return IN_CGROUP.format(version=cgroup_version, tree=tree_summary(limits)) + disk
    return f"{PER_PROCESS.format(memory=GPU_MEMORY if gpu else 'memory')} ({problem}){disk}"


def rlimit_table(limits: Limits, *, gpu: bool, tree: bool = False) -> list[tuple[int, int, int]]:
    """The ``(resource, soft, hard)`` triples to set for ``limits`` (pure; applied by
    ``preexec``). ``tree``: a cgroup bounds the tree's memory and processes, so those rlimits
    are left out (``RLIMIT_NPROC`` would count every sandbox on the host together).

    With GPU devices exposed the memory limit is ``RLIMIT_DATA`` instead of ``RLIMIT_AS``: CUDA
    reserves address space far beyond what it uses, so an address-space cap breaks
    ``torch.cuda`` while a data cap still stops a runaway heap or private mapping. CPU time is
    soft one second below hard: the kernel sends SIGXCPU (which the result names) before SIGKILL.
    """
    cpu = limits.cpu_seconds()
    table = [
        (resource.RLIMIT_FSIZE, limits.max_file_bytes, limits.max_file_bytes),
        (resource.RLIMIT_NOFILE, limits.max_open_files, limits.max_open_files),
        (resource.RLIMIT_CORE, 0, 0),  # a core dump of target code could hold anything it read
        (resource.RLIMIT_CPU, cpu, cpu + 1),
    ]
    if limits.max_memory_bytes is not None and not tree:
        memory = resource.RLIMIT_DATA if gpu else resource.RLIMIT_AS
        table.append((memory, limits.max_memory_bytes, limits.max_memory_bytes))
    if limits.max_processes is not None and not tree:
        table.append((resource.RLIMIT_NPROC, limits.max_processes, limits.max_processes))
    return table


def preexec(limits: Limits, *, gpu: bool, enter: Sequence[int] = ()) -> Callable[[], None]:
    """A ``preexec_fn`` that joins the command's cgroups (``enter``: their ``cgroup.procs``,
    opened by the parent), then sets every limit. It runs in the child before ``exec``, so
    nothing the command starts can run outside its cgroup."""
    table = rlimit_table(limits, gpu=gpu, tree=bool(enter))

    def apply() -> None:
        me = str(os.getpid()).encode()  # the child's own pid: this runs after the fork
        for fd in enter:
            os.write(fd, me)
        for which, soft, hard in table:
            resource.setrlimit(which, (soft, hard))

    return apply
