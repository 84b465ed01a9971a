"""How a delivery's body is stored: as received, or LZ4-compressed when it is large.

A 1 MB console log is the largest thing the intake stores, and storing it is bound by the disk:
this machine's disk takes about 225 MB/s with ``fdatasync`` (dd, 200 MiB), and SQLite's WAL
writes each byte twice (the WAL, then the checkpoint), so raw megabyte bodies top out near
110 posts/s whatever the CPU does. LZ4 (the frame format) compresses the bench's console log
4.4x at about 1 ms of CPU per MB; zlib at level 1 compresses better but costs 4.7 ms per MB.
PostgreSQL compresses the column with LZ4 (migration 0011), not pglz: a pglz pass over LZ4
output cost more server CPU than the rest of storing a report.
The codec is a column of its own (``deliveries.body_codec``), never guessed from the bytes: a
body is anything a client sent, magic numbers included.
"""

from __future__ import annotations

from dataclasses import dataclass

import lz4.frame

RAW = "raw"
LZ4 = "lz4"
COMPRESS_FROM_BYTES = 64 * 1024
# Kept raw unless compression saves at least this fraction (already-compressed uploads).
MIN_SAVING = 1 / 8


class BodyCodecError(ValueError):
    """A stored body whose codec this version does not know, or whose bytes do not decode."""


def encode_body(body: bytes) -> tuple[bytes, str]:
    """The bytes to store for ``body`` and their codec."""
    if len(body) < COMPRESS_FROM_BYTES:
        return body, RAW
    packed = lz4.frame.compress(body, store_size=True)
    if len(packed) > len(body) * (1 - MIN_SAVING):
        return body, RAW
    return packed, LZ4


@dataclass(frozen=True)
class StoredBody:
    """A body as it is stored: the bytes and their codec.

    Encoded by the request (in its thread pool) rather than by the database's one writer
    thread: compressing a 1 MB log takes about 2 ms of CPU, which in the writer would add up
    across a batch while every caller in it waits.
    """

    data: bytes
    codec: str

    @classmethod
    def of(cls, body: bytes) -> StoredBody:
        """``body`` encoded for storage (:func:`encode_body`)."""
        return cls(*encode_body(body))


def decode_body(stored: bytes, codec: str) -> bytes:
    """The body as it was received, from what :func:`encode_body` stored."""
    if codec == RAW:
        return stored
    if codec == LZ4:
        try:
            return bytes(lz4.frame.decompress(stored))
        except RuntimeError as exc:  # python-lz4 reports corrupt frames as RuntimeError
            raise BodyCodecError(f"stored body does not decode as LZ4: {exc}") from exc
    raise BodyCodecError(f"unknown body codec {codec!r}")
