"""The loop guard's budget on SQLite and PostgreSQL: exact under concurrent takers (the unique
slot decides), idempotent per event, one window per PR per hour, and bad input refused."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from bot.db.records.bot_events import BotEvent, EventOutcome, event_key, hour_of, take_budget
from bot.db.session import session_scope

REPO = "acme/trt"
NOON = datetime(2026, 12, 1, 12, 0, 5, tzinfo=UTC)


def _take(settings, key: str, *, pr: int | None = 7, budget: int = 5, at=NOON) -> BotEvent:
    with session_scope(settings.resolved_database_url) as session:
        row = take_budget(
            session,
            repository=REPO,
            pr_number=pr,
            kind="ci_failure",
            key=key,
            caused_by="codegen[bot]",
            budget=budget,
            at=at,
        )
        session.flush()
        session.expunge(row)
        return row


def _rows(settings) -> list[BotEvent]:
    with session_scope(settings.resolved_database_url) as session:
        rows = list(session.scalars(select(BotEvent).order_by(BotEvent.id)))
        session.expunge_all()
    return rows


def test_concurrent_takers_get_exactly_the_budget(settings) -> None:
    takers, budget = 12, 5
    start = threading.Barrier(takers)
    outcomes: list[str] = []
    errors: list[BaseException] = []

    def take(i: int) -> None:
        try:
            start.wait()
            outcomes.append(_take(settings, f"report:{i}", budget=budget).outcome)
        except BaseException as exc:  # surfaced below: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(takers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert sorted(outcomes) == ["acted"] * budget + ["guarded"] * (takers - budget)
    rows = _rows(settings)
    assert len(rows) == takers  # every event recorded, guarded ones included
    assert sorted(r.slot for r in rows if r.slot is not None) == [1, 2, 3, 4, 5]
    assert {r.outcome for r in rows if r.slot is None} == {EventOutcome.GUARDED.value}


def test_the_same_event_again_gets_its_first_answer(settings) -> None:
    first = _take(settings, "report:1", budget=1)
    again = _take(settings, "report:1", budget=1, at=NOON + timedelta(hours=3))
    assert first.outcome == again.outcome == "acted" and first.id == again.id
    assert _take(settings, "report:2", budget=1).outcome == "guarded"
    assert _take(settings, "report:2", budget=1).outcome == "guarded"
    assert len(_rows(settings)) == 2


def test_the_budget_is_per_pr_and_per_clock_hour(settings) -> None:
    for i in range(2):
        assert _take(settings, f"a{i}", budget=2).outcome == "acted"
    assert _take(settings, "a2", budget=2).outcome == "guarded"
    assert _take(settings, "b0", pr=8, budget=2).outcome == "acted"  # another PR
    assert _take(settings, "n0", pr=None, budget=2).outcome == "acted"  # no PR: its own budget
    next_hour = NOON.replace(minute=0, second=0) + timedelta(hours=1)
    assert hour_of(next_hour) == hour_of(NOON) + 1
    assert _take(settings, "a3", budget=2, at=next_hour).outcome == "acted"
    assert {r.pr_number for r in _rows(settings)} == {0, 7, 8}


def test_a_zero_budget_acts_on_nothing_and_a_negative_one_is_refused(settings) -> None:
    assert _take(settings, "z", budget=0).outcome == "guarded"
    with pytest.raises(ValueError, match="budget must be 0 or more"):
        _take(settings, "neg", budget=-1)


def test_a_long_key_is_a_digest_never_a_truncation() -> None:
    long_a, long_b = "x" * 300 + "a", "x" * 300 + "b"
    assert event_key("report:1") == "report:1"
    assert event_key(long_a) != event_key(long_b)
    assert len(event_key(long_a)) <= 200


def test_the_reason_names_the_cause_and_the_budget(settings) -> None:
    _take(settings, "r1", budget=1)
    guarded = _take(settings, "r2", budget=1)
    text = guarded.describe(1)
    assert "acme/trt#7" in text and "codegen[bot]" in text and "r2" in text
    assert "REPAIRBOT_BOT_EVENT_BUDGET_PER_PR_HOUR=1" in text
