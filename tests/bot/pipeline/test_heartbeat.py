"""The heartbeat thread: beats until stopped, and says when the job is no longer ours."""

from __future__ import annotations

import threading

import pytest
from pydantic import ValidationError

from bot.pipeline.heartbeat import beating
from tests.conftest import make_settings


def test_beats_until_the_job_is_no_longer_ours_and_survives_a_failed_beat():
    calls: list[int] = []

    def beat() -> bool:
        calls.append(len(calls))
        if len(calls) == 1:
            raise RuntimeError("database is locked")  # retried at the next beat
        return len(calls) < 4

    with beating(beat, interval_s=0.01, name="test-heartbeat") as heartbeat:
        assert heartbeat.lost.wait(timeout=60)
    assert len(calls) == 4


def test_stops_with_its_block():
    beats = threading.Semaphore(0)

    def beat() -> bool:
        beats.release()
        return True

    with beating(beat, interval_s=0.01, name="test-heartbeat") as heartbeat:
        assert beats.acquire(timeout=60)
    assert heartbeat._stop.is_set() and not heartbeat.lost.is_set()


def test_the_lost_window_must_leave_room_for_two_heartbeats(tmp_path):
    with pytest.raises(ValidationError, match="REPAIRBOT_VERIFY_LOST_AFTER_S"):
        make_settings(tmp_path, verify_heartbeat_s=5.0, verify_lost_after_s=10.0)
    assert make_settings(tmp_path, verify_heartbeat_s=0.5, verify_lost_after_s=3.0)
