"""A hostile target's code: try every escape, record which ones worked. Standard library only.

Run as a script (``hostile.py CONFIG``) or imported as a module whose source is appended to a
target package's ``__init__.py`` (then it reads ``HOSTILE_CONFIG`` from the environment, or the
path in ``CONFIG_PATH`` below). CONFIG (JSON) names what to attack: ``parent_pid`` (the service
process, whose environment holds ``secret``), ``data_files`` (a SQLite file, an env file),
``outside`` (a host path outside the run dir), ``git_hook`` (a hook in the target's ``.git``),
``port`` (a TCP port the test listens on, on the host's loopback), ``shm`` (a secret file in
the host's ``/dev/shm``), ``forks``, ``allocate_gib`` and ``touch_mib``; ``results`` is where to write what
happened (``true`` = it worked). A write that works may have landed in the sandbox's private
``/tmp`` or ``/dev/shm``: the test judges writes by what reached the host. With ``control`` set it skips what would harm the host (remount,
forks, allocation): that run shows the probes do detect an escape when nothing confines them.
"""

from __future__ import annotations

import contextlib
import glob
import json
import mmap
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable

CONFIG_PATH = ""  # set by the probe test when appending this source to a package


def _read_secret(path: str, secret: str) -> bool:
    try:
        with open(path, "rb") as stream:
            return secret.encode() in stream.read()
    except OSError:
        return False


def parent_environ(config: dict[str, object]) -> bool:
    """The service's environment, through its pid (the issue's secret theft)."""
    return _read_secret(f"/proc/{config['parent_pid']}/environ", str(config["secret"]))


def any_environ(config: dict[str, object]) -> bool:
    """Any process's environment holding the secret."""
    return any(_read_secret(p, str(config["secret"])) for p in glob.glob("/proc/[0-9]*/environ"))


def data_files(config: dict[str, object]) -> bool:
    """The data dir's SQLite file, an env file."""
    for path in config["data_files"]:  # type: ignore[attr-defined]
        with contextlib.suppress(OSError), open(path, "rb") as stream:
            if stream.read(1):
                return True
    return False


def _write(path: str) -> bool:
    try:
        with open(path, "w") as stream:
            stream.write("planted by a hostile test\n")
        return True
    except OSError:
        return False


def write_outside(config: dict[str, object]) -> bool:
    """A file outside the run dir."""
    return _write(str(config["outside"]))


def write_home(config: dict[str, object]) -> bool:
    """A file in the service user's home (root's, here)."""
    return _write(os.path.join("/root", f"hostile-{os.getpid()}.txt"))


def write_git_hook(config: dict[str, object]) -> bool:
    """A hook in the target's ``.git``: git would run it outside the sandbox."""
    return _write(str(config["git_hook"]))


def remount_rw(config: dict[str, object]) -> bool:
    """``mount -o remount,bind,rw /`` (needs capabilities)."""
    if config.get("control"):
        return False
    result = subprocess.run(
        ["mount", "-o", "remount,bind,rw", "/"], capture_output=True, check=False
    )
    return result.returncode == 0


def capabilities(config: dict[str, object]) -> bool:
    """Any effective capability."""
    with open("/proc/self/status") as stream:
        line = next(x for x in stream if x.startswith("CapEff:"))
    return int(line.split()[1], 16) != 0


def network(config: dict[str, object]) -> bool:
    """A TCP connection to the host's loopback (the service's API, PostgreSQL...)."""
    try:
        with socket.create_connection(("127.0.0.1", int(str(config["port"]))), timeout=5):
            return True
    except OSError:
        return False


def shm_read(config: dict[str, object]) -> bool:
    """A secret the test left in the host's ``/dev/shm``."""
    return _read_secret(os.path.join("/dev/shm", str(config["shm"])), str(config["secret"]))


def shm_write(config: dict[str, object]) -> bool:
    """A write to ``/dev/shm`` (the test checks whether it reached the host's)."""
    return _write(os.path.join("/dev/shm", f"{config['shm']}-w"))


def fork_bomb(config: dict[str, object]) -> bool:
    """``forks`` processes alive at once."""
    if config.get("control"):
        return False
    children: list[int] = []
    try:
        for _ in range(int(str(config["forks"]))):
            pid = os.fork()
            if pid == 0:
                time.sleep(3)
                os._exit(0)
            children.append(pid)
    except OSError:
        pass
    finally:
        for pid in children:
            os.waitpid(pid, 0)
    return len(children) >= int(str(config["forks"]))


def allocate(config: dict[str, object]) -> bool:
    """An ``allocate_gib`` GiB anonymous mapping whose first ``touch_mib`` MiB are written, in a
    child of its own: refused at once per process (address space), or the child is killed at the
    tree's memory limit (a cgroup). Never more than ``touch_mib``: harmless if nothing stops it."""
    if config.get("control"):
        return False
    pid = os.fork()
    if pid == 0:
        try:
            block = mmap.mmap(-1, int(str(config["allocate_gib"])) << 30)
            for offset in range(0, int(str(config["touch_mib"])) << 20, mmap.PAGESIZE):
                block[offset] = 1
        except (OSError, MemoryError, OverflowError):
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


CHECKS: dict[str, Callable[[dict[str, object]], bool]] = {
    "parent_environ": parent_environ,
    "any_environ": any_environ,
    "data_files": data_files,
    "write_outside": write_outside,
    "write_home": write_home,
    "write_git_hook": write_git_hook,
    "remount_rw": remount_rw,
    "capabilities": capabilities,
    "network": network,
    "shm_read": shm_read,
    "shm_write": shm_write,
    "fork_bomb": fork_bomb,
    "allocate": allocate,
}


def attack(config: dict[str, object]) -> dict[str, bool]:
    """Run every check; ``True`` where the escape worked."""
    return {name: check(config) for name, check in CHECKS.items()}


def _main(config_path: str) -> None:
    with open(config_path) as stream:
        config = json.load(stream)
    results = attack(config)
    with contextlib.suppress(OSError), open(str(config["results"]), "w") as stream:
        json.dump(results, stream)
    escaped = sorted(name for name, worked in results.items() if worked)
    # As a module under the import probe, the answer is the exception: the run dir is gone after.
    if __name__ != "__main__":
        raise RuntimeError(f"HOSTILE escaped={','.join(escaped) or 'none'}")


if __name__ == "__main__":
    _main(sys.argv[1])
elif CONFIG_PATH:
    _main(CONFIG_PATH)
