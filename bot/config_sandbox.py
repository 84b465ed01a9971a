"""The sandbox's resource settings, part of ``bot.config.Settings`` (read with it, once).

What one sandboxed command (a verification's test run, an import check, a probe) may use:
its whole process tree's memory, processes and CPU, and how much its run dir may grow. Each
command runs in a cgroup of its own under ``REPAIRBOT_SANDBOX_CGROUP_ROOT``; where none can be
made there, memory, processes and CPU time fall back to per-process rlimits, and every result
says why (``fixers.sandbox``).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

MIB = 1 << 20
GIB = 1 << 30


class SandboxSettings(BaseSettings):
    """The sandbox's limits (``REPAIRBOT_SANDBOX_*``)."""

    model_config = SettingsConfigDict(
        env_prefix="REPAIRBOT_", env_file=None, extra="ignore", use_attribute_docstrings=True
    )

    sandbox_memory_bytes: int = Field(default=16 * GIB, ge=16 * MIB)
    """Memory of one sandboxed command's whole process tree (its cgroup; without one, each
    process's address space)."""
    sandbox_processes: int = Field(default=1024, ge=8)
    """Processes and threads of one sandboxed command's whole tree (its cgroup; without one, the
    sandbox user's); a tree that keeps forking at the limit is stopped."""
    sandbox_cpus: float | None = Field(default=None, gt=0)
    """CPU quota of one sandboxed command's whole tree, in cores (cgroup only; unset: no quota)."""
    sandbox_cpu_seconds: int | None = Field(default=None, ge=1)
    """CPU time of one sandboxed command: its whole tree's (cgroup) and each process's (unset:
    each process twice the command's timeout)."""
    sandbox_disk_bytes: int = Field(default=8 * GIB, ge=MIB)
    """How much a sandboxed command's run dir (its only writable place on disk) may grow while it
    runs; past it the tree is stopped."""
    sandbox_cgroup_root: Path = Path("/sys/fs/cgroup")
    """The cgroup filesystem (v2, or v1's memory, pids, cpu, cpuacct hierarchies below it): each
    sandboxed command gets a cgroup of its own under the service's; where none can be made there,
    per-process rlimits, and /readyz and every result say why."""
