"""Temporary run folders that outlive no one: each is leased by the process that made it, and a
folder whose lease no live process holds (its maker was killed) is removed by the next maker.

A sandboxed process writes into its run folder as the sandbox user, so the folder cannot hold
its own lease (the sandbox could remove it): the lease is a file beside it, ``<folder>.lease``,
held with ``flock`` for the folder's life; the kernel drops it when the holder dies, however it
dies.

As root, the launcher hands a run dir over to the sandbox user before each command
(``hand_over``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# A folder without a lease file (made before leases, or its maker died between the two calls)
# is left this long before it counts as orphaned.
UNLEASED_GRACE_S = 3600.0


@dataclass
class RunDir:
    """A leased temporary folder; ``release`` removes it (safe to call twice)."""

    path: Path
    lease_fd: int

    def release(self) -> None:
        """Remove the folder and its lease."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self.lease_fd >= 0:
            with contextlib.suppress(OSError):
                _lease_of(self.path).unlink()
            os.close(self.lease_fd)
            self.lease_fd = -1


def _lease_of(path: Path) -> Path:
    return path.with_name(path.name + ".lease")


def make_run_dir(prefix: str) -> RunDir:
    """A new folder under the temporary directory, leased by this process; folders of the same
    prefix whose makers are gone are removed first."""
    remove_orphans(prefix)
    path = Path(tempfile.mkdtemp(prefix=prefix))
    fd = os.open(_lease_of(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return RunDir(path, fd)


def remove_orphans(prefix: str, parent: Path | None = None) -> list[Path]:
    """Remove the folders ``<parent>/<prefix>*`` that no live process leases; the removed."""
    parent = parent or Path(tempfile.gettempdir())
    removed: list[Path] = []
    for path in parent.glob(f"{prefix}*"):
        if path.name.endswith(".lease") or not path.is_dir() or path.is_symlink():
            continue
        if _orphaned(path):
            shutil.rmtree(path, ignore_errors=True)
            with contextlib.suppress(OSError):
                _lease_of(path).unlink()
            removed.append(path)
    return removed


def _orphaned(path: Path) -> bool:
    lease = _lease_of(path)
    try:
        fd = os.open(lease, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        try:
            return time.time() - path.stat().st_mtime > UNLEASED_GRACE_S
        except OSError:
            return False
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # held: its maker is alive
    finally:
        os.close(fd)
    return True


def hand_over(paths: Sequence[Path], keep: Sequence[Path], uid: int) -> None:
    """Give the writable trees to the sandbox user ``uid`` (as root); ``keep`` stays the
    service's.

    Never follows a symlink: the tree may hold links a previous target run planted.
    """
    kept = {p.resolve() for p in keep}
    for top in paths:
        for folder, dirs, files in os.walk(top, followlinks=False):
            for name in [".", *dirs, *files]:
                path = Path(folder) / name if name != "." else Path(folder)
                if path in kept:
                    continue
                info = path.lstat()
                if info.st_uid != uid:
                    os.chown(path, uid, uid, follow_symlinks=False)
