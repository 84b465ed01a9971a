"""``bot.db.body_codec`` and the stored deliveries: large bodies are kept compressed (zstd) and
read back byte for byte on SQLite and PostgreSQL, as are LZ4 bodies earlier versions stored;
small, incompressible and hostile bodies stay raw; a stored body that does not decode is an
error, never other bytes."""

from __future__ import annotations

import os

import lz4.frame
import pytest
import zstandard
from sqlalchemy import select, update

from bot.db.body_codec import (
    COMPRESS_FROM_BYTES,
    LZ4,
    RAW,
    ZSTD,
    BodyCodecError,
    decode_body,
    encode_body,
)
from bot.db.crud import NewDelivery, insert_deliveries
from bot.db.models import Delivery
from bot.db.session import session_scope

LOG = b"".join(f"[10:{i % 60:02d}] building layer {i}\n".encode() for i in range(40_000))


def test_a_large_log_is_stored_compressed_and_decodes_to_itself() -> None:
    stored, codec = encode_body(LOG)
    assert codec == ZSTD and len(stored) < len(LOG) // 2
    assert decode_body(stored, codec) == LOG


def test_an_lz4_body_stored_by_an_earlier_version_still_decodes() -> None:
    assert decode_body(lz4.frame.compress(LOG, store_size=True), LZ4) == LOG


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"x" * (COMPRESS_FROM_BYTES - 1),  # small: not worth a codec
        os.urandom(2 * COMPRESS_FROM_BYTES),  # incompressible: kept as sent
        lz4.frame.compress(os.urandom(100_000)),  # an LZ4 frame upload is a body like any other
        zstandard.ZstdCompressor().compress(os.urandom(100_000)),  # and so is a zstd frame
    ],
    ids=["empty", "small", "random", "lz4-frame-uploaded", "zstd-frame-uploaded"],
)
def test_other_bodies_stay_raw(body: bytes) -> None:
    stored, codec = encode_body(body)
    assert (stored, codec) == (body, RAW)
    assert decode_body(stored, codec) == body


@pytest.mark.parametrize(
    "uploaded",
    [lz4.frame.compress(LOG), zstandard.ZstdCompressor(level=-5).compress(LOG)],
    ids=["lz4", "zstd"],
)
def test_a_body_that_is_itself_a_compressed_frame_comes_back_as_sent(uploaded: bytes) -> None:
    stored, codec = encode_body(uploaded)  # compressible again: stored as a frame of a frame
    assert decode_body(stored, codec) == uploaded != LOG


def test_what_does_not_decode_is_an_error() -> None:
    with pytest.raises(BodyCodecError, match="does not decode as LZ4"):
        decode_body(b"not a frame", LZ4)
    with pytest.raises(BodyCodecError, match="does not decode as zstd"):
        decode_body(b"not a frame", ZSTD)
    truncated = zstandard.ZstdCompressor().compress(LOG)[:-100]
    with pytest.raises(BodyCodecError, match="does not decode as zstd"):
        decode_body(truncated, ZSTD)
    with pytest.raises(BodyCodecError, match="unknown body codec 'brotli'"):
        decode_body(b"", "brotli")


def test_deliveries_round_trip_through_the_database(settings) -> None:
    url = settings.resolved_database_url
    bodies = {"big": LOG, "small": b'{"zen": "ok"}', "random": os.urandom(200_000)}
    with session_scope(url) as session:
        insert_deliveries(
            session,
            [NewDelivery("ci", key, "ci_failure", None, body) for key, body in bodies.items()],
        )
    with session_scope(url) as session:
        rows = {d.key: d for d in session.scalars(select(Delivery))}
        assert {key: rows[key].body_codec for key in bodies} == {
            "big": ZSTD,
            "small": RAW,
            "random": RAW,
        }
        assert len(rows["big"].body) < len(LOG) // 2
        assert {key: rows[key].content() for key in bodies} == bodies


def test_a_delivery_an_earlier_version_stored_as_lz4_reads_back(settings) -> None:
    url = settings.resolved_database_url
    with session_scope(url) as session:
        insert_deliveries(session, [NewDelivery("ci", "old", "ci_failure", None, b"placeholder")])
        session.execute(
            update(Delivery)
            .where(Delivery.key == "old")
            .values(body=lz4.frame.compress(LOG, store_size=True), body_codec=LZ4)
        )
    with session_scope(url) as session:
        assert session.scalars(select(Delivery)).one().content() == LOG
