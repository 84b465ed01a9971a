"""Waiting on file descriptors with ``poll``, which has no ceiling on descriptor numbers.

``select.select`` refuses any descriptor at or above ``FD_SETSIZE`` (1024): a process that
holds many sockets and files (the service under load, a long test session) then fails with
"filedescriptor out of range in select()" the moment it opens one more pipe.
"""

from __future__ import annotations

import math
import select
from collections.abc import Sequence

# A hang-up or an error is "ready" as select reports it: the next read returns what is left, or
# b"" at the end, and the next write raises.
_READ_EVENTS = select.POLLIN | select.POLLHUP | select.POLLERR
_WRITE_EVENTS = select.POLLOUT | select.POLLHUP | select.POLLERR


def _wait(fds: Sequence[int], events: int, timeout_s: float) -> list[int]:
    poller = select.poll()
    for fd in fds:
        poller.register(fd, events)
    timeout_ms = max(0, math.ceil(timeout_s * 1000))
    return [fd for fd, _ in poller.poll(timeout_ms)]


def readable(fds: Sequence[int], timeout_s: float) -> list[int]:
    """Those of ``fds`` ready to read (or at their end) within ``timeout_s`` seconds."""
    return _wait(fds, _READ_EVENTS, timeout_s)


def writable(fd: int, timeout_s: float) -> bool:
    """Whether ``fd`` can be written to (or has failed) within ``timeout_s`` seconds."""
    return bool(_wait([fd], _WRITE_EVENTS, timeout_s))
