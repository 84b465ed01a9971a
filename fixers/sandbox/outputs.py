"""Reading what a target wrote (a JUnit report, a probe's answer) without trusting it."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO


def open_output(path: Path) -> BinaryIO:
    """Open a file a target wrote (a JUnit report, a probe's answer) for reading, safely.

    Refuses a symlink (a target could point it at a host file the service may read) and
    anything but a regular file (a FIFO would block the service). Raises ``OSError``.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path.name} is not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_output(path: Path, max_bytes: int = 1 << 20) -> str | None:
    """The text of a small file a target wrote, or ``None`` when missing or unsafe to read."""
    try:
        with open_output(path) as stream:
            return stream.read(max_bytes).decode("utf-8", errors="replace")
    except OSError:
        return None
