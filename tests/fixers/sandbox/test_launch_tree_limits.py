"""Whole-tree limits with the real sandbox and real cgroups: hostile commands against them.

Each hostile command runs through ``run_isolated`` (bubblewrap, as the sandbox user) in a cgroup
of its own, with limits small enough that a broken limit could not hurt this shared machine:
every hostile loop also stops itself well before harm and then prints ``UNSTOPPED``, which
fails the test. Where cgroups cannot be made (a missing, foreign or read-only cgroup root), the
fallback runs for real: per-process rlimits, and the reason in the result.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixers.sandbox import (
    CGROUP_ROOT,
    CPU,
    DISK,
    MEMORY,
    PROCESSES,
    TIMEOUT,
    Limits,
    SandboxOptions,
    SandboxResult,
    run_isolated,
    start_isolated,
    tree_limits_problem,
    wait_isolated,
)
from fixers.sandbox.cgroups import PREFIX, own_cgroups, settings_for
from fixers.sandbox.disk import usage
from tests.fixers.sandbox.test_cgroups import in_private_mounts
from tests.fixers.sandbox.test_launch import _processes_with, _without_bwrap

ROOT = Path(__file__).resolve().parents[3]
MIB = 1 << 20
# Small on purpose: this machine is shared. The CPU quota keeps a spinning tree to half a core.
SMALL = Limits(timeout_s=60, max_memory_bytes=256 * MIB, max_processes=64, cpus=0.5)


def groups_of(maker: int) -> list[Path]:
    """The cgroups process ``maker`` made for its commands (it runs in the same cgroups as this
    test process)."""
    own = own_cgroups(Path("/proc/self/cgroup").read_text())
    folders = [CGROUP_ROOT / c / own[c].lstrip("/") for c in own if c]
    folders += [CGROUP_ROOT / own[""].lstrip("/")] if "" in own else []
    return [g for f in folders if f.is_dir() for g in f.glob(f"{PREFIX}{maker}-*")]


def remove_groups(folders: list[Path]) -> list[int]:
    """Kill what is in ``folders`` and remove them (a test's cleanup); the processes found."""
    found = [int(p) for f in folders for p in (f / "cgroup.procs").read_text().split()]
    for pid in found:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    for folder in folders:
        while folder.exists():
            try:
                folder.rmdir()
            except OSError:
                assert time.monotonic() < deadline, f"{folder} stays"
                time.sleep(0.1)
    return found


@pytest.fixture(autouse=True)
def no_cgroup_left_behind() -> Iterator[None]:
    """Every test ends with none of this process's cgroups left, even when it failed."""
    yield
    left = groups_of(os.getpid())
    remove_groups(left)
    assert left == [], "the launcher left cgroups behind"


def _in_force() -> None:
    """What the hostile tests rely on; a host where it fails cannot show whole-tree limits."""
    assert tree_limits_problem(CGROUP_ROOT) is None, tree_limits_problem(CGROUP_ROOT)


def _run(
    tmp_path: Path, code: str, limits: Limits = SMALL, options: SandboxOptions | None = None
) -> tuple[SandboxResult, str]:
    """Run ``code``: its result, and its output (without the command line the log starts with)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    command = [sys.executable, "-c", textwrap.dedent(code)]
    result = run_isolated(
        command,
        cwd=run_dir,
        run_dir=run_dir,
        log_path=run_dir / "log",
        limits=limits,
        options=options or SandboxOptions(),
    )
    log = (run_dir / "log").read_text(errors="replace")
    return result, log.removeprefix(f"$ {' '.join(command)}\n")


ALLOCATE_50_GB = """
    chunks = []
    for number in range((50 << 30) // (64 << 20)):  # 50 GB, 64 MiB at a time, each page touched
        chunks.append(b"\\x01" * (64 << 20))
        if number * 64 >= 2048:  # a broken limit would be 2 GiB in: stop before harm
            print("UNSTOPPED", flush=True)
            break
"""


def test_a_50_gb_allocation_is_stopped_at_the_trees_memory_limit(tmp_path: Path) -> None:
    _in_force()
    result, log = _run(tmp_path, ALLOCATE_50_GB)
    assert result.limit == MEMORY, (result.hits, log)
    assert "256 MiB" in result.hits[0].detail and "UNSTOPPED" not in log
    assert log.endswith(f"[sandbox] limit hit (memory): the process tree {result.hits[0].detail}\n")
    assert "whole tree in a cgroup" in result.isolation and result.returncode != 0


FORK_BOMB = """
    import os
    while True:
        try:
            os.fork()
        except OSError:
            pass
"""
HOLDING_BOMB = FORK_BOMB.replace("pass", "__import__('time').sleep(60)")  # then holds them
FORK_20 = """
    import os, time
    kids = []
    for _ in range(20):
        pid = os.fork()
        if pid == 0:
            time.sleep(1); os._exit(0)
        kids.append(pid)
    print("FORKED", len(kids))
    for pid in kids:
        os.waitpid(pid, 0)
"""


def test_a_fork_bomb_is_stopped_at_the_trees_process_limit(tmp_path: Path) -> None:
    _in_force()
    result, log = _run(tmp_path, FORK_BOMB)
    assert result.limit == PROCESSES, (result.hits, log)
    assert result.hits[0].detail.startswith("kept forking at its limit of 64 processes")
    assert result.seconds < 30  # stopped by the limit, long before the 60 s timeout


def test_a_fork_bomb_holding_its_limit_takes_nothing_from_another_sandbox(
    tmp_path: Path,
) -> None:
    """The process limit is the tree's: ``RLIMIT_NPROC`` would count both sandboxes as one
    user, and the neighbour could not fork while the bomb holds its processes."""
    _in_force()
    bomb_dir = tmp_path / "bomb"
    running = start_isolated(
        [sys.executable, "-c", textwrap.dedent(HOLDING_BOMB)],
        cwd=bomb_dir, run_dir=bomb_dir, log_path=bomb_dir / "log", limits=SMALL,
    )  # fmt: skip
    group = running.group
    assert group is not None
    deadline = time.monotonic() + 30
    while len(group.pids()) < 60 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(group.pids()) >= 60  # at its limit (64, bubblewrap's own processes included)
    neighbour, log = _run(tmp_path, FORK_20)
    assert running.process.poll() is None and len(group.pids()) >= 60  # it held them meanwhile
    bomb = wait_isolated(running, timeout_s=0.1)
    assert neighbour.returncode == 0 and "FORKED 20" in log, log
    assert neighbour.hits == ()
    assert PROCESSES in [hit.name for hit in bomb.hits], bomb.hits


def test_cpu_time_is_the_whole_trees(tmp_path: Path) -> None:
    """Four spinning processes of 3 s of CPU each would pass per-process limits of 3 s; the tree
    used its 3 s together and is stopped."""
    _in_force()
    spin = """
        import os
        for _ in range(3):
            if os.fork() == 0:
                break
        while True:
            pass
    """
    limits = Limits(timeout_s=60, max_memory_bytes=256 * MIB, max_cpu_s=3, cpus=1)
    result, log = _run(tmp_path, spin, limits)
    assert result.limit == CPU, (result.hits, log)
    detail = result.hits[0].detail
    assert detail.endswith("past its limit of 3 s: stopped")
    assert float(detail.split()[1]) < 6  # per process, it would have been 4 times 3 s


FILL_DISK = """
    block = b"\\x01" * (1 << 20)
    for number in range(2048):  # up to 2 GiB in 8 MiB files: a broken limit stops there
        with open(f"fill-{number}", "wb") as stream:
            for _ in range(8):
                stream.write(block)
    print("UNSTOPPED", flush=True)
"""


def test_a_test_that_fills_the_disk_is_stopped_at_the_run_dirs_budget(tmp_path: Path) -> None:
    _in_force()
    limits = Limits(timeout_s=120, max_memory_bytes=256 * MIB, max_disk_bytes=64 * MIB, cpus=1)
    result, log = _run(tmp_path, FILL_DISK, limits)
    assert result.limit == DISK, (result.hits, log)
    assert "grew its run dir past the limit of 64 MiB" in result.hits[0].detail
    assert "UNSTOPPED" not in log
    assert usage(tmp_path / "run") < 1024 * MIB  # stopped within a poll of its budget


def test_a_file_past_its_size_limit_is_named(tmp_path: Path) -> None:
    _in_force()
    big = "open('big', 'wb').write(b'x' * (32 << 20))"
    limits = Limits(timeout_s=60, max_memory_bytes=256 * MIB, max_file_bytes=16 * MIB)
    result, _ = _run(tmp_path, big, limits)
    assert result.limit == DISK and "16 MiB" in result.hits[0].detail
    assert (tmp_path / "run" / "big").stat().st_size == 16 * MIB


def test_a_test_that_sleeps_forever_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    _in_force()
    limits = Limits(timeout_s=3, max_memory_bytes=256 * MIB)
    result, _ = _run(tmp_path, "import time\ntime.sleep(600)", limits)
    assert result.timed_out and result.limit == TIMEOUT
    assert result.hits[0].detail == "was still running after 3 s: stopped"


DAEMON = """
    import os, sys, time
    if os.fork() == 0:
        os.setsid()  # out of the process group, as a daemon
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", sys.argv[1]])
        os._exit(0)
    time.sleep(1)
    print("PARENT DONE", flush=True)
"""


def _daemon(tmp_path: Path, options: SandboxOptions) -> tuple[SandboxResult, list[int]]:
    marker = f"hostile-daemon-{os.getpid()}-{time.monotonic_ns()}"
    run_dir = tmp_path / "run"
    result = run_isolated(
        [sys.executable, "-c", textwrap.dedent(DAEMON), marker],
        cwd=run_dir, run_dir=run_dir, log_path=run_dir / "log", limits=SMALL, options=options,
    )  # fmt: skip
    time.sleep(0.5)
    return result, _processes_with(marker)


def test_a_daemon_that_left_the_process_group_dies_with_its_cgroup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unconfined (development only, no pid namespace to end it), the cgroup is all that
    catches it; the control, without cgroups, shows the daemon surviving."""
    _in_force()
    _without_bwrap(monkeypatch, tmp_path)
    result, left = _daemon(tmp_path, SandboxOptions(allow_unsandboxed=True))
    assert result.returncode == 0 and result.stray_processes == 1 and left == []
    log = (tmp_path / "run" / "log").read_text()
    assert log.endswith("[sandbox] 1 process(es) still in its cgroup at the end: killed\n")
    control = SandboxOptions(allow_unsandboxed=True, cgroup_root=tmp_path / "no-cgroups")
    result, left = _daemon(tmp_path, control)
    try:
        assert result.returncode == 0 and result.stray_processes == 0 and len(left) == 1
    finally:
        for pid in left:
            os.kill(pid, signal.SIGKILL)


ATTACK = """
    import json, os, subprocess, sys
    folders = json.loads(sys.stdin.read())
    tried = {"own_cgroup": open("/proc/self/cgroup").read().strip()}
    tried["cgroupfs_visible"] = os.path.exists("/sys/fs/cgroup")
    for name, value in (("pids.max", "max"), ("memory.limit_in_bytes", "-1"), ("memory.max", "max")):
        for folder in folders:
            try:
                with open(os.path.join(folder, name), "w") as stream:
                    stream.write(value)
                tried[f"raise {name}"] = True
            except OSError as exc:
                tried.setdefault(f"raise {name}", exc.strerror)
    for folder in folders:  # out of its group: into the parent
        try:
            with open(os.path.join(os.path.dirname(folder), "cgroup.procs"), "w") as stream:
                stream.write(str(os.getpid()))
            tried["move out"] = True
        except OSError as exc:
            tried.setdefault("move out", exc.strerror)
    os.makedirs("/tmp/mnt", exist_ok=True)
    for kind in (["-t", "cgroup2", "none"], ["-t", "cgroup", "-o", "pids", "none"]):
        done = subprocess.run(["mount", *kind, "/tmp/mnt"], capture_output=True)
        tried[f"mount {kind[1]}"] = done.returncode == 0
    print(json.dumps(tried))
"""


@pytest.mark.parametrize("exposed", [False, True], ids=["hidden", "exposed-read-only"])
def test_target_code_can_neither_raise_its_limits_nor_leave_its_cgroup(
    tmp_path: Path, exposed: bool
) -> None:
    """Attacked from inside, with the group's real paths in hand: hidden by default; and even
    where an operator exposed the cgroup filesystem (read-only), nothing can be written."""
    _in_force()
    run_dir = tmp_path / "run"
    options = SandboxOptions(readonly=(CGROUP_ROOT,) if exposed else ())
    running = start_isolated(
        [sys.executable, "-c", textwrap.dedent(ATTACK)],
        cwd=run_dir, run_dir=run_dir, log_path=run_dir / "log", limits=SMALL, options=options,
        stdin=True,
    )  # fmt: skip
    assert running.group is not None and running.stdin is not None
    folders = [str(folder) for folder in running.group.distinct()]
    with running.stdin as stdin:
        stdin.write(json.dumps(folders).encode())
    running.process.wait(timeout=60)  # the attack is over; its group is still there to read
    limits = {s.file: s.value for s in settings_for(running.group.version, SMALL)}
    held = {
        s.file: (running.group.folders[s.controller] / s.file).read_text().split()[0]
        for s in settings_for(running.group.version, SMALL)
        if s.required
    }
    result = wait_isolated(running, timeout_s=60)
    log = (run_dir / "log").read_text()
    tried = json.loads(log.strip().splitlines()[-1])
    assert result.returncode == 0, log
    # its own cgroup namespace: each of its cgroups is "/" to it, the host's names unknown
    assert all(line.endswith(":/") for line in tried["own_cgroup"].splitlines())
    assert tried["cgroupfs_visible"] is exposed
    assert [k for k, v in tried.items() if v is True and k != "cgroupfs_visible"] == []
    assert held == {k: v.split()[0] for k, v in limits.items() if k in held}


def test_with_no_cgroup_filesystem_the_fallback_is_per_process_and_says_why(
    tmp_path: Path,
) -> None:
    missing = SandboxOptions(cgroup_root=tmp_path / "no-cgroups")
    plain = SandboxOptions(cgroup_root=tmp_path)
    code = "import resource; print('NPROC', resource.getrlimit(resource.RLIMIT_NPROC))"
    result, log = _run(tmp_path, code, Limits(timeout_s=60, max_processes=64), missing)
    assert result.returncode == 0 and "NPROC (64, 64)" in log
    assert f"no whole-tree limits ({tmp_path / 'no-cgroups'} does not exist" in result.isolation
    assert tree_limits_problem(tmp_path).startswith(f"no cgroup filesystem at {tmp_path}")
    result, _ = _run(tmp_path, code, Limits(timeout_s=60), plain)
    assert "per-process rlimits" in result.isolation


READ_ONLY = """
import json, sys
from pathlib import Path
from fixers.sandbox import CGROUP_ROOT, Limits, run_isolated, tree_limits_problem
run_dir = Path(sys.argv[1])
code = "import resource; print('AS', resource.getrlimit(resource.RLIMIT_AS)[0])"
result = run_isolated([sys.executable, "-c", code], cwd=run_dir, run_dir=run_dir,
                      log_path=run_dir / "log", limits=Limits(timeout_s=60, max_memory_bytes=1 << 30))
print(json.dumps({"problem": tree_limits_problem(CGROUP_ROOT), "isolation": result.isolation,
                  "returncode": result.returncode, "log": (run_dir / "log").read_text()}))
"""


def test_a_read_only_cgroup_filesystem_falls_back_with_the_reason(tmp_path: Path) -> None:
    """The host's cgroup mounts remounted read-only in a private mount namespace (the host's
    stay writable): the launcher runs the command with per-process rlimits and says why."""
    mounts = [m for m in (CGROUP_ROOT, *CGROUP_ROOT.iterdir()) if m.is_dir()]
    remount = " && ".join(f"mount -o remount,bind,ro {m}" for m in mounts if os.path.ismount(m))
    script = tmp_path / "read_only.py"
    script.write_text(READ_ONLY)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    found: dict[str, Any] = in_private_mounts(remount, script, run_dir)
    assert "Read-only file system" in found["problem"]
    assert found["returncode"] == 0 and f"AS {1 << 30}" in found["log"]
    assert "per-process rlimits" in found["isolation"] and "Read-only" in found["isolation"]
