"""A stream re-cut at line boundaries in one reused buffer: nothing lost, NUL bytes refused."""

from __future__ import annotations

import io
from typing import Any

import pytest

from fixers.intake.blocks import line_blocks
from fixers.intake.errors import IntakeError

TEXT = b"".join(b"line %d %s\n" % (i, b"x" * (i % 13)) for i in range(200)) + b"no newline"


class _ReadOnly:
    """A stream with ``read`` only, giving at most 5 bytes a call (as a pipe may)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def read(self, size: int = -1) -> bytes:
        piece, self._data = self._data[: min(size, 5)], self._data[min(size, 5) :]
        return piece


def _blocks(stream: Any, head: bytes, size: int) -> list[bytes]:
    return [bytes(buffer[:end]) for buffer, end in line_blocks(stream, head, size=size)]


@pytest.mark.parametrize("size", [1, 7, 64, 4096, 1 << 20])
@pytest.mark.parametrize("head_bytes", [0, 3, 100])
def test_blocks_rejoin_to_the_input_and_end_at_newlines(size, head_bytes):
    blocks = _blocks(io.BytesIO(TEXT[head_bytes:]), TEXT[:head_bytes], size)
    assert b"".join(blocks) == TEXT
    for block in blocks[:-1]:
        # A block is cut after its last newline; only a line longer than the buffer is split.
        assert block.endswith(b"\n") or len(block) == max(size, head_bytes)


def test_a_stream_without_readinto_is_read_too():
    assert b"".join(_blocks(_ReadOnly(TEXT), b"", 64)) == TEXT


def test_the_buffer_is_reused_not_reallocated():
    buffers = {id(buffer) for buffer, _ in line_blocks(io.BytesIO(TEXT), size=64)}
    assert len(buffers) == 1


@pytest.mark.parametrize(("head_bytes", "offset"), [(10, 2), (100, 99), (0, 1000), (4, 1000)])
def test_a_nul_byte_is_refused_with_its_offset_in_the_whole_input(head_bytes, offset):
    data = TEXT[:offset] + b"\x00" + TEXT[offset:]
    with pytest.raises(IntakeError, match=f"NUL byte at offset {offset}\\)"):
        _blocks(io.BytesIO(data[head_bytes:]), data[:head_bytes], 64)


def test_no_block_holding_a_nul_byte_is_handed_out():
    data = TEXT[:500] + b"\x00" + TEXT
    seen = []
    with pytest.raises(IntakeError):
        for buffer, end in line_blocks(io.BytesIO(data), size=64):
            seen.append(bytes(buffer[:end]))
    assert b"\x00" not in b"".join(seen)
