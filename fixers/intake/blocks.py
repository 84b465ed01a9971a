"""A byte stream cut into line-aligned blocks, read into one reused buffer.

Each byte is copied once, from the stream into the buffer; only the unfinished line at the end
of a block moves, to the buffer's start. Reading new ``bytes`` per block, joining them to the
carried line and slicing at the last newline would copy every byte three times (and allocate
4 MiB three times) before the scanner even looks at it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from fixers.intake.errors import IntakeError

BLOCK_BYTES = 4 << 20


def refuse_nul(
    block: bytes | bytearray, offset: int, start: int = 0, end: int | None = None
) -> None:
    """A NUL byte anywhere (not only in the first bytes) means binary input, not a CI report.

    ``offset`` is where ``block[0]`` lies in the whole input; only ``block[start:end]`` is searched.
    """
    nul = block.find(b"\x00", start, len(block) if end is None else end)
    if nul != -1:
        raise IntakeError(
            f"input looks binary (NUL byte at offset {offset + nul}); "
            "expected console text, JSON or JUnit XML"
        )


def line_blocks(
    stream: BinaryIO, head: bytes = b"", *, size: int = BLOCK_BYTES
) -> Iterator[tuple[bytearray, int]]:
    """``head`` then the rest of ``stream`` as ``(buffer, end)``: ``buffer[:end]`` is one block.

    Every block but the last ends with a newline; a line longer than the buffer comes in pieces.
    The buffer is reused: a block is valid only until the next one is asked for. Raises
    ``IntakeError`` at the first NUL byte, before the block holding it is handed out.
    """
    buffer = bytearray(max(size, len(head)))
    view = memoryview(buffer)
    buffer[: len(head)] = head
    refuse_nul(buffer, 0, 0, len(head))
    filled, offset, eof = len(head), 0, False
    while True:
        while filled < len(buffer) and not eof:
            count = _read_into(stream, view[filled:])
            refuse_nul(buffer, offset, filled, filled + count)
            filled += count
            eof = count == 0
        if eof:
            if filled:
                yield buffer, filled
            return
        cut = buffer.rfind(b"\n", 0, filled) + 1 or filled
        yield buffer, cut
        rest = filled - cut
        buffer[:rest] = buffer[cut:filled]  # same length: the buffer is never resized
        offset, filled = offset + cut, rest


def _read_into(stream: BinaryIO, free: memoryview) -> int:
    readinto = getattr(stream, "readinto", None)
    if readinto is not None:
        return int(readinto(free) or 0)
    data = stream.read(len(free))
    free[: len(data)] = data
    return len(data)
