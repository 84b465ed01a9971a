"""Resource limits for target processes, applied as rlimits in the child before ``exec``.

Limits are inherited by everything the target starts, so they bound the whole tree. They are
per process (memory, CPU time, file size) or per sandbox user (processes: ``RLIMIT_NPROC`` counts
every process and thread of the user that runs the sandbox, which is why the sandbox runs as its
own unprivileged user when the service is root — the kernel never applies it to root).
"""

from __future__ import annotations

import resource
from collections.abc import Callable
from dataclasses import dataclass

GIB = 1 << 30


@dataclass(frozen=True)
class Limits:
    """Resource limits for one command; ``None`` leaves that resource unlimited."""

    timeout_s: float = 1800.0
    max_file_bytes: int = 2 * GIB
    max_open_files: int = 4096
    max_memory_bytes: int | None = 16 * GIB
    max_processes: int | None = 1024
    max_cpu_s: int | None = None

    def cpu_seconds(self) -> int:
        """CPU seconds per process: as given, else twice the wall-clock timeout.

        Twice, because a test that uses two cores for its whole timeout is normal; one that burns
        more than that is spinning, and the wall-clock timeout would stop the tree anyway.
        """
        return self.max_cpu_s if self.max_cpu_s is not None else int(2 * self.timeout_s) + 1


def rlimit_table(limits: Limits, *, gpu: bool) -> list[tuple[int, int]]:
    """The ``(resource, value)`` pairs to set for ``limits`` (pure; applied by ``apply``).

    With GPU devices exposed the memory limit is ``RLIMIT_DATA`` instead of ``RLIMIT_AS``: CUDA
    reserves address space far beyond what it uses, so an address-space cap breaks
    ``torch.cuda`` while a data cap still stops a runaway heap or private mapping.
    """
    table = [
        (resource.RLIMIT_FSIZE, limits.max_file_bytes),
        (resource.RLIMIT_NOFILE, limits.max_open_files),
        (resource.RLIMIT_CORE, 0),  # a core dump of target code could hold anything it read
        (resource.RLIMIT_CPU, limits.cpu_seconds()),
    ]
    if limits.max_memory_bytes is not None:
        memory = resource.RLIMIT_DATA if gpu else resource.RLIMIT_AS
        table.append((memory, limits.max_memory_bytes))
    if limits.max_processes is not None:
        table.append((resource.RLIMIT_NPROC, limits.max_processes))
    return table


def preexec(limits: Limits, *, gpu: bool) -> Callable[[], None]:
    """A ``preexec_fn`` that sets every limit (soft = hard, so the target cannot raise them)."""
    table = rlimit_table(limits, gpu=gpu)

    def apply() -> None:
        for which, value in table:
            resource.setrlimit(which, (value, value))

    return apply
