"""``fixers.evidence.fd_wait``: readiness of pipes numbered past select's ceiling of 1024, timeouts, and
the end of a pipe counted as readable (as select counts it)."""

from __future__ import annotations

import contextlib
import os
import resource
import select
from collections.abc import Iterator

import pytest

from fixers.evidence.fd_wait import readable, writable

HIGH = 1500  # past FD_SETSIZE


@pytest.fixture
def high_pipe() -> Iterator[tuple[int, int]]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft <= HIGH + 1:  # raised within the hard limit, as a busy service's would be
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4 * HIGH), hard))
    read_end, write_end = os.pipe()
    high_read, high_write = os.dup2(read_end, HIGH), os.dup2(write_end, HIGH + 1)
    os.close(read_end)
    os.close(write_end)
    yield high_read, high_write
    for fd in (high_read, high_write):
        with contextlib.suppress(OSError):
            os.close(fd)


def test_select_itself_refuses_such_a_descriptor(high_pipe: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="filedescriptor out of range"):
        select.select([high_pipe[0]], [], [], 0)


def test_a_high_descriptor_is_waited_on(high_pipe: tuple[int, int]) -> None:
    read_end, write_end = high_pipe
    assert readable([read_end], 0.01) == []  # nothing written yet: the timeout ends the wait
    assert writable(write_end, 0.01)
    os.write(write_end, b"x")
    assert readable([read_end], 1.0) == [read_end]
    assert os.read(read_end, 10) == b"x"


def test_the_end_of_a_pipe_is_readable(high_pipe: tuple[int, int]) -> None:
    read_end, write_end = high_pipe
    os.close(write_end)
    assert readable([read_end], 1.0) == [read_end]
    assert os.read(read_end, 10) == b""
