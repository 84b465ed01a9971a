"""A bounded byte buffer for one captured block of a log: keeps the head, optionally the tail."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fixers.intake.anchors import ByteData

HEAD_BYTES = 64 << 10
TAIL_BYTES = 64 << 10
_CHAIN_PHRASES = (
    b"The above exception was the direct cause",
    b"During handling of the above exception",
)


class Capture:
    """Collects bytes up to ``HEAD_BYTES``; with ``keep_tail`` also the last ``TAIL_BYTES``."""

    def __init__(self, *, keep_tail: bool) -> None:
        self._head = bytearray()
        self._tail = bytearray()
        self._keep_tail = keep_tail
        self.dropped = 0

    def add(self, data: ByteData) -> None:
        """Append bytes, dropping the middle once both ends are full."""
        if not data:
            return
        room = HEAD_BYTES - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        if not self._keep_tail:
            self.dropped += len(data)
            return
        self._tail += data
        if len(self._tail) > 2 * TAIL_BYTES:  # trim in batches: amortised O(1) per byte
            excess = len(self._tail) - TAIL_BYTES
            del self._tail[:excess]
            self.dropped += excess

    def ends_with_chain_boundary(self) -> bool:
        """Whether the text so far ends by announcing a chained exception."""
        end = bytes((self._tail or self._head)[-400:])
        return any(phrase in end for phrase in _CHAIN_PHRASES)

    def bytes(self) -> bytes:
        """The kept bytes, with a marker line where the middle was dropped."""
        if len(self._tail) > TAIL_BYTES:
            self.dropped += len(self._tail) - TAIL_BYTES
            del self._tail[: len(self._tail) - TAIL_BYTES]
        if not self.dropped:
            return bytes(self._head + self._tail)
        marker = f"\n[... {self.dropped} bytes omitted by repairbot ...]\n".encode()
        return bytes(self._head) + marker + bytes(self._tail)
