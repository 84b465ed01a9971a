"""``bot.api.group_write.committed``: a route's write awaits its batch's commit; a database error
is a 503 with ``Retry-After`` (nothing of that write was kept), never a 500."""

from __future__ import annotations

import asyncio

import pytest
from fastapi import HTTPException
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from bot.api.group_write import committed
from bot.db.group_commit import ONE_BY_ONE
from bot.db.models import Delivery
from bot.db.session import session_scope
from bot.intake.deliveries import DeliveryOutcome, GitHubDelivery, record_delivery


def _stored(settings) -> int:
    with session_scope(settings.resolved_database_url) as session:
        return int(session.scalar(select(func.count(Delivery.id))) or 0)


def test_a_write_answers_after_its_commit(settings):
    delivery = GitHubDelivery("g-1", "issues", "opened", b"{}")
    recorded = asyncio.run(
        committed(settings, ONE_BY_ONE, lambda session: record_delivery(session, delivery))
    )
    assert recorded.outcome is DeliveryOutcome.IGNORED and _stored(settings) == 1


def _stores_then_fails(session: Session) -> None:
    record_delivery(session, GitHubDelivery("g-2", "issues", "opened", b"{}"))
    session.execute(text("SELECT * FROM no_such_table"))  # a real error from the database


def test_a_database_error_is_a_503_and_keeps_nothing_of_that_write(settings):
    with pytest.raises(HTTPException) as raised:
        asyncio.run(committed(settings, ONE_BY_ONE, _stores_then_fails))
    assert raised.value.status_code == 503
    assert raised.value.headers == {"Retry-After": str(settings.database_retry_after_s)}
    assert "nothing was kept: retry" in str(raised.value.detail)
    assert _stored(settings) == 0
