"""Fallback of unclaimed verifications down their chain, on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from bot.db.models import Fix, Verification
from bot.db.session import session_scope
from bot.runner.requests import fall_back, fallback_chain, request_verification

CHAIN = ["gpu.any", "cpu"]


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        ("gpu.H100_PCIe", ["gpu.H100_PCIe", "gpu.any", "cpu"]),
        ("gpu.any", ["gpu.any", "cpu"]),
        ("cpu", ["cpu"]),
    ],
)
def test_the_chain_never_goes_back_up(requested, expected):
    assert fallback_chain(requested, CHAIN) == expected


def _queued(settings, gpu_types) -> int:
    with session_scope(settings.resolved_database_url) as session:
        fix = Fix(
            forge="local",
            repository="/r",
            dedupe_key=uuid.uuid4().hex,
            signature="s",
            base_sha="a",
            branch="b",
            head_sha="c",
            title="t",
            body="",
            diff="",
        )
        session.add(fix)
        session.flush()
        return request_verification(
            session, fix=fix, requested_by="t", default_queue="cpu", gpu_types=gpu_types
        ).id


def _step(settings, at: float) -> list[str]:
    with session_scope(settings.resolved_database_url) as session:
        fall_back(session, fallback_queues=CHAIN, after_s=30, resend_after_s=120, now=at)
    with session_scope(settings.resolved_database_url) as session:
        return list(session.scalars(select(Verification)).one().options["queues_tried"])


def test_unclaimed_verifications_move_down_then_are_resent_at_the_end(settings):
    _queued(settings, ["H100_PCIe"])
    with session_scope(settings.resolved_database_url) as session:
        sent = session.scalars(select(Verification)).one().options["sent_at"]
    assert _step(settings, sent + 10) == ["gpu.H100_PCIe"]
    assert _step(settings, sent + 31) == ["gpu.H100_PCIe", "gpu.any"]
    assert _step(settings, sent + 31 + 31) == ["gpu.H100_PCIe", "gpu.any", "cpu"]
    assert _step(settings, sent + 62 + 60) == [
        "gpu.H100_PCIe",
        "gpu.any",
        "cpu",
    ]  # waits at the end
    assert _step(settings, sent + 62 + 121) == [
        "gpu.H100_PCIe",
        "gpu.any",
        "cpu",
        "cpu",
    ]  # lost? resend


def test_a_cpu_request_never_moves_to_a_gpu_queue(settings):
    _queued(settings, [])
    with session_scope(settings.resolved_database_url) as session:
        sent = session.scalars(select(Verification)).one().options["sent_at"]
    assert _step(settings, sent + 60) == ["cpu"]
