"""Fallback of unclaimed verifications down their chain, on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import select

from bot.db.models import Fix, Verification, utcnow
from bot.db.session import session_scope
from bot.runner.requests import fall_back, fallback_chain, request_verification, rescue_stalled

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


def _running(settings, *, started_ago_s: float, heartbeat_ago_s: float | None) -> int:
    verification_id = _queued(settings, [])
    now = utcnow()
    with session_scope(settings.resolved_database_url) as session:
        row = session.get_one(Verification, verification_id)
        row.state, row.task_id = "running", "claim-of-a-worker"
        row.started_at = now - timedelta(seconds=started_ago_s)
        row.heartbeat_at = (
            None if heartbeat_ago_s is None else now - timedelta(seconds=heartbeat_ago_s)
        )
    return verification_id


def _rescue(settings) -> list[int]:
    with session_scope(settings.resolved_database_url) as session:
        return [v.id for v in rescue_stalled(session, lost_after_s=30, max_attempts=3)]


def test_a_running_verification_is_lost_when_its_heartbeat_stops_not_when_it_is_long(settings):
    alive = _running(settings, started_ago_s=7200, heartbeat_ago_s=2)  # long, but beating
    silent = _running(settings, started_ago_s=40, heartbeat_ago_s=35)  # its worker died
    legacy = _running(settings, started_ago_s=40, heartbeat_ago_s=None)  # from before heartbeats
    assert sorted(_rescue(settings)) == [silent, legacy]
    with session_scope(settings.resolved_database_url) as session:
        kept, requeued = session.get_one(Verification, alive), session.get_one(Verification, silent)
        assert (kept.state, kept.task_id) == ("running", "claim-of-a-worker")
        assert requeued.state == "queued" and requeued.task_id is None  # the old claim is void
        assert requeued.options["attempts"] == 2 and requeued.options["queues_tried"] == [
            "cpu",
            "cpu",
        ]
        assert "no heartbeat for 30 s" in requeued.reason and "attempt 2 of 3" in requeued.reason


def test_a_verification_lost_on_every_attempt_ends_with_the_reason(settings):
    verification_id = _running(settings, started_ago_s=100, heartbeat_ago_s=90)
    for attempt in (2, 3):
        assert _rescue(settings) == [verification_id]
        with session_scope(settings.resolved_database_url) as session:
            row = session.get_one(Verification, verification_id)
            assert row.state == "queued" and row.options["attempts"] == attempt
            row.state, row.heartbeat_at = "running", utcnow() - timedelta(seconds=90)
    assert _rescue(settings) == [verification_id]
    with session_scope(settings.resolved_database_url) as session:
        row = session.get_one(Verification, verification_id)
        assert row.state == "error" and row.finished_at is not None
        assert "no result after 3 attempts: the worker was lost each time" in row.reason
