"""How a delivery's body is stored: as received, or compressed (zstd) when it is large.

A 1 MB console log is the largest thing the intake stores, and storing it is bound by the
bytes written: this machine's disk takes about 225 MB/s with ``fdatasync`` (dd, 200 MiB), and
SQLite's WAL writes each byte twice (the WAL, then the checkpoint). Compressed size per MB of
log, and CPU per MB (one core, python-zstandard 0.25 and python-lz4 4.4, three runs):

| log (first MB)               | zstd level 1             | LZ4 frame             |
|------------------------------|--------------------------|-----------------------|
| bench/webhooks.py console    | 22.8-24.7x, 0.79-0.89 ms | 4.4x, 0.86-0.92 ms    |
| Debian dpkg.log (433 KB)     | 11.2x, 0.96-1.63 ms      | 6.5x, 0.65-0.81 ms    |
| Debian apt term.log (224 KB) | 7.0x, 1.23-2.13 ms       | 4.7x, 0.92-1.20 ms    |

zstd writes 1.5-1.7x fewer bytes on the two real logs (5x on the bench's log, which repeats
itself more than a real build does) for up to twice the CPU; both release the GIL while they
compress. On the bench's 1 MB reports zstd took repairbot on SQLite from 285-308 to 426-474
reports/s (two runs each, the code otherwise the same): SQLite's writer spends its time on
bytes. New bodies are zstd; LZ4 bodies stored by earlier versions still decode.
PostgreSQL compresses the column with LZ4 (migration 0011), not pglz: a pglz pass over
already-compressed bodies cost more server CPU than the rest of storing a report.
The codec is a column of its own (``deliveries.body_codec``), never guessed from the bytes: a
body is anything a client sent, magic numbers included.
"""

from __future__ import annotations

import lz4.frame
import zstandard

RAW = "raw"
ZSTD = "zstd"
LZ4 = "lz4"  # written by versions before zstd; read only
COMPRESS_FROM_BYTES = 64 * 1024
ZSTD_LEVEL = 1  # level 3 (zstd's default): 1-4% smaller on the logs above, 10-30% slower
# Kept raw unless compression saves at least this fraction (already-compressed uploads).
MIN_SAVING = 1 / 8
# For frames that do not say their size (ours always do): bodies are capped far below this.
MAX_DECODED_BYTES = 1 << 30


class BodyCodecError(ValueError):
    """A stored body whose codec this version does not know, or whose bytes do not decode."""


def encode_body(body: bytes) -> tuple[bytes, str]:
    """The bytes to store for ``body`` and their codec."""
    if len(body) < COMPRESS_FROM_BYTES:
        return body, RAW
    # A compressor per call: python-zstandard's compressors are not safe to share across threads.
    packed = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(body)
    if len(packed) > len(body) * (1 - MIN_SAVING):
        return body, RAW
    return packed, ZSTD


def decode_body(stored: bytes, codec: str) -> bytes:
    """The body as it was received, from what :func:`encode_body` (or an earlier version) stored."""
    if codec == RAW:
        return stored
    if codec == ZSTD:
        try:
            unpacker = zstandard.ZstdDecompressor()
            return unpacker.decompress(stored, max_output_size=MAX_DECODED_BYTES)
        except zstandard.ZstdError as exc:
            raise BodyCodecError(f"stored body does not decode as zstd: {exc}") from exc
    if codec == LZ4:
        try:
            return bytes(lz4.frame.decompress(stored))
        except RuntimeError as exc:  # python-lz4 reports corrupt frames as RuntimeError
            raise BodyCodecError(f"stored body does not decode as LZ4: {exc}") from exc
    raise BodyCodecError(f"unknown body codec {codec!r}")
