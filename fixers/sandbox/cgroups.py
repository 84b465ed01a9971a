"""Whole-tree limits: each sandboxed command runs in a cgroup of its own (v2, else v1).

The cgroup is made under the one this process is in (``/proc/self/cgroup``), in the cgroup
filesystem at ``root`` (``/sys/fs/cgroup``): on cgroup v2 one folder with ``memory.max``,
``pids.max`` and ``cpu.max``; on v1 one per hierarchy (memory, pids, cpu, cpuacct) with
``memory.limit_in_bytes``, ``pids.max`` and ``cpu.cfs_quota_us``. The command joins it before it
can fork (``limits.preexec``); at the end every process still in it is killed and it is removed.

Target code cannot touch it: the folders are the service user's, no path to them is in the
sandbox's view, and its own cgroup namespace hides even their names.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fixers.sandbox.limits import Limits

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct")
V2_CONTROLLERS = ("memory", "pids", "cpu")
PREFIX = "repairbot-"  # then the making process's pid: a folder whose maker is gone is an orphan
SERVICE_LEAF = "repairbot-service"  # v2: where the service's own processes move (``delegated``)
CPU_PERIOD_US = 100_000
ORPHAN_AGE_S = 60.0  # younger folders are left alone: their maker may be in another pid namespace
KILL_WAIT_S = 5.0


class TreeLimitsUnavailable(RuntimeError):
    """Cgroups cannot bound a command's tree here; the message says why."""


@dataclass(frozen=True)
class Hierarchy:
    """Where this process's cgroups are: controller → folder (``""`` for cgroup v2's one)."""

    version: int
    parents: Mapping[str, Path]


@dataclass(frozen=True)
class Setting:
    """One value written into a new cgroup (``required=False``: only where the file exists)."""

    controller: str
    file: str
    value: str
    required: bool = True


@dataclass(frozen=True)
class Usage:
    """What a cgroup counted: processes the OOM killer ended, forks refused, CPU seconds."""

    oom_kills: int = 0
    refused_forks: int = 0
    cpu_s: float = 0.0


def own_cgroups(text: str) -> dict[str, str]:
    """``/proc/self/cgroup`` as controller → path; cgroup v2's line is under ``""``."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for name in parts[1].split(",") if parts[1] else [""]:
                found[name] = parts[2]
    return found


def _inside(mount: Path, path: str) -> Path:
    folder = mount / path.lstrip("/")
    if not (folder / "cgroup.procs").is_file():
        raise TreeLimitsUnavailable(f"this process's cgroup {path} is not a cgroup at {folder}")
    return folder


def locate(root: Path, own: Mapping[str, str]) -> Hierarchy:
    """The cgroups this process is in, under ``root``; raises ``TreeLimitsUnavailable``."""
    if not root.is_dir():
        raise TreeLimitsUnavailable(f"{root} does not exist (no cgroup filesystem there)")
    if (root / "cgroup.controllers").is_file():
        return _locate_v2(root, own)
    present = [c for c in V1_CONTROLLERS if (root / c / "cgroup.procs").is_file() and c in own]
    if not present:
        raise TreeLimitsUnavailable(
            f"no cgroup filesystem at {root} (neither cgroup v2 nor v1's "
            f"{', '.join(V1_CONTROLLERS)} hierarchies)"
        )
    missing = [c for c in V1_CONTROLLERS if c not in present]
    if missing:
        raise TreeLimitsUnavailable(f"cgroup v1 at {root} lacks {', '.join(missing)}")
    return Hierarchy(1, {c: _inside(root / c, own[c]) for c in V1_CONTROLLERS})


def _locate_v2(root: Path, own: Mapping[str, str]) -> Hierarchy:
    if "" not in own:
        raise TreeLimitsUnavailable(f"this process is in no cgroup of the v2 hierarchy at {root}")
    return Hierarchy(2, {"": delegated(_inside(root, own[""]), V2_CONTROLLERS)})


def delegated(current: Path, controllers: tuple[str, ...]) -> Path:
    """The v2 cgroup whose children may use ``controllers``: this process's own (``current``),
    or its parent once the service moved into ``SERVICE_LEAF``.

    Cgroup v2 lets a cgroup hand controllers to its children only while it holds no process
    itself (but the root): the processes of the service's cgroup are moved into a leaf of it
    first, as systemd asks of a service with ``Delegate=yes``. Raises ``TreeLimitsUnavailable``.
    """
    parent = current.parent if current.name == SERVICE_LEAF else current
    missing = [c for c in controllers if c not in _read(parent / "cgroup.controllers").split()]
    if missing:
        raise TreeLimitsUnavailable(
            f"cgroup v2: {', '.join(missing)} not available in {parent} "
            "(bound to a v1 hierarchy, or not delegated to it)"
        )
    wanted = [c for c in controllers if c not in _read(parent / "cgroup.subtree_control").split()]
    enable = " ".join(f"+{c}" for c in wanted)
    try:
        for attempt in range(3):  # a process forked meanwhile lands in the parent again
            try:
                if wanted:
                    _write(parent / "cgroup.subtree_control", enable)
                return parent
            except OSError as exc:
                if exc.errno != errno.EBUSY or attempt == 2:
                    raise
                _move_into_leaf(parent)
    except OSError as exc:
        raise TreeLimitsUnavailable(
            f"cgroup v2: cannot hand {', '.join(wanted)} to the children of {parent} "
            f"({exc.strerror}): give repairbot a cgroup of its own it may write (systemd: "
            "Delegate=yes)"
        ) from exc
    return parent


def _move_into_leaf(parent: Path) -> None:
    """Move every process of ``parent`` into its ``SERVICE_LEAF`` (made when missing)."""
    leaf = parent / SERVICE_LEAF
    leaf.mkdir(mode=0o755, exist_ok=True)
    for pid in _read(parent / "cgroup.procs").split():
        with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
            _write(leaf / "cgroup.procs", pid)


def settings_for(version: int, limits: Limits) -> list[Setting]:
    """The files to write into a new cgroup for ``limits`` (pure; a new cgroup is unlimited)."""
    memory, pids = limits.max_memory_bytes, limits.max_processes
    quota = None if limits.cpus is None else max(1000, int(limits.cpus * CPU_PERIOD_US))
    found: list[Setting] = []
    if version == 2:
        if memory is not None:
            found.append(Setting("", "memory.max", str(memory)))
            found.append(Setting("", "memory.swap.max", "0", required=False))
        if pids is not None:
            found.append(Setting("", "pids.max", str(pids)))
        if quota is not None:
            found.append(Setting("", "cpu.max", f"{quota} {CPU_PERIOD_US}"))
        return found
    if memory is not None:  # the memory limit first: memory + swap may never be below it
        found.append(Setting("memory", "memory.limit_in_bytes", str(memory)))
        found.append(Setting("memory", "memory.memsw.limit_in_bytes", str(memory), False))
    if pids is not None:
        found.append(Setting("pids", "pids.max", str(pids)))
    if quota is not None:
        found.append(Setting("cpu", "cpu.cfs_period_us", str(CPU_PERIOD_US)))
        found.append(Setting("cpu", "cpu.cfs_quota_us", str(quota)))
    return found


def keyed(text: str) -> dict[str, int]:
    """``key value`` lines (``memory.events``, ``pids.events``, ``cpu.stat``) as a mapping."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            found[key] = int(value.strip())
    return found


def _write(path: Path, value: str) -> None:
    """Write a cgroup file (never creating one: a missing file is an error)."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:  # gone, or the controller does not have it: nothing counted
        return ""


@dataclass
class TreeGroup:
    """The cgroup(s) of one command: controller → folder (v1: one per hierarchy)."""

    version: int
    folders: Mapping[str, Path]

    def distinct(self) -> list[Path]:
        """Each folder once (v1 hierarchies may be mounted together, as ``cpu,cpuacct``)."""
        return list(dict.fromkeys(self.folders.values()))

    def apply(self, limits: Limits) -> None:
        """Write ``limits`` into the group; raises ``OSError``."""
        for setting in settings_for(self.version, limits):
            path = self.folders[setting.controller] / setting.file
            if setting.required or path.exists():
                _write(path, setting.value)

    def open_procs(self) -> list[int]:
        """Descriptors of each folder's ``cgroup.procs``, for the child to write its pid to."""
        return [
            os.open(folder / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
            for folder in self.distinct()
        ]

    def usage(self) -> Usage:
        """What the kernel counted so far."""
        if self.version == 2:
            folder = self.folders[""]
            events, pids = keyed(_read(folder / "memory.events")), _read(folder / "pids.events")
            cpu_s = keyed(_read(folder / "cpu.stat")).get("usage_usec", 0) / 1e6
        else:
            events = keyed(_read(self.folders["memory"] / "memory.oom_control"))
            pids = _read(self.folders["pids"] / "pids.events")
            nanoseconds = _read(self.folders["cpuacct"] / "cpuacct.usage").strip() or "0"
            cpu_s = int(nanoseconds) / 1e9
        return Usage(events.get("oom_kill", 0), keyed(pids).get("max", 0), cpu_s)

    def pids(self) -> set[int]:
        """The processes in the group now."""
        return {
            int(pid)
            for folder in self.distinct()
            for pid in _read(folder / "cgroup.procs").split()
            if pid.isdigit()
        }

    def kill_all(self) -> int:
        """SIGKILL every process in the group until none is left (or ``KILL_WAIT_S``); how
        many there were at first."""
        first = self.pids()  # before cgroup.kill, which may have emptied the group on return
        if self.version == 2:
            with contextlib.suppress(OSError):
                _write(self.folders[""] / "cgroup.kill", "1")
        deadline = time.monotonic() + KILL_WAIT_S
        left = first
        while left and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)
            left = self.pids()  # children forked meanwhile, until nothing can fork
        return len(first)

    def remove(self) -> bool:
        """Remove the group's folders (empty of processes by then); False when one stays."""
        removed = True
        for folder in self.distinct():
            removed = _rmdir(folder) and removed
        return removed


def _rmdir(folder: Path) -> bool:
    deadline = time.monotonic() + KILL_WAIT_S
    while True:
        try:
            folder.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError as exc:  # EBUSY: a killed process has not left yet
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def make_group(hierarchy: Hierarchy, limits: Limits) -> TreeGroup:
    """A new cgroup for one command, under this process's own, with ``limits`` written.

    Raises ``TreeLimitsUnavailable`` (and leaves nothing behind) when it cannot be made.
    """
    name = f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    made: dict[Path, Path] = {}
    folders: dict[str, Path] = {}
    try:
        for controller, parent in hierarchy.parents.items():
            key = parent.resolve()
            if key not in made:
                remove_orphans(parent)
                made[key] = parent / name
                made[key].mkdir(mode=0o755)
                if not (made[key] / "cgroup.procs").is_file():
                    raise TreeLimitsUnavailable(f"{parent} is not in a cgroup filesystem")
            folders[controller] = made[key]
        group = TreeGroup(hierarchy.version, folders)
        group.apply(limits)
        return group
    except (OSError, TreeLimitsUnavailable) as exc:
        for folder in made.values():
            _rmdir(folder)
        if isinstance(exc, TreeLimitsUnavailable):
            raise
        raise TreeLimitsUnavailable(f"cannot set up a cgroup: {exc}") from exc


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_orphans(parent: Path) -> list[Path]:
    """Remove the empty groups under ``parent`` whose maker is gone (it was killed before it
    could); the removed. A group still holding a process is refused by the kernel and stays."""
    removed = []
    for folder in parent.glob(f"{PREFIX}*"):
        maker = folder.name.removeprefix(PREFIX).partition("-")[0]
        try:
            young = time.time() - folder.stat().st_mtime < ORPHAN_AGE_S
        except OSError:
            continue
        if not maker.isdigit() or young or _alive(int(maker)):
            continue
        with contextlib.suppress(OSError):
            folder.rmdir()
            removed.append(folder)
    return removed


def own_group(cgroup_root: Path, limits: Limits) -> TreeGroup:
    """A new cgroup for one command, under this process's own in ``cgroup_root``; raises
    ``TreeLimitsUnavailable``."""
    try:
        own = own_cgroups(Path("/proc/self/cgroup").read_text())
    except OSError as exc:
        raise TreeLimitsUnavailable(f"this process's cgroups are unknown: {exc}") from exc
    return make_group(locate(cgroup_root, own), limits)
