"""``bot.db.bulk_insert``: rows written on the DBAPI cursor read back through the ORM exactly as
the ORM would have written them (bytes, NULL, timezone-aware times), conflicts skipped, on
SQLite and PostgreSQL; and the SQLite pages of a new database are 4 KiB."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import cast

from sqlalchemy import Table, select, text

from bot.db.bulk_insert import insert_new_returning
from bot.db.crud import NewDelivery, insert_deliveries
from bot.db.models import Delivery
from bot.db.session import session_scope

DELIVERIES = cast(Table, Delivery.__table__)


def _row(key: str, body: bytes, action: str | None, at: datetime) -> dict[str, object]:
    return {
        "source": "github",
        "key": key,
        "event": "issues",
        "action": action,
        "body": body,
        "outcome": "stored",
        "received_at": at,
        "dispatched_at": at,
    }


def test_rows_read_back_as_the_orm_writes_them(settings) -> None:
    at = datetime(2026, 12, 1, 19, 30, 15, 123456, tzinfo=UTC)
    body = bytes(range(256)) * 40  # every byte value, NUL included
    url = settings.resolved_database_url
    with session_scope(url) as session:
        returned = insert_new_returning(
            session,
            DELIVERIES,
            [_row("k-1", body, None, at), _row("k-2", b"", "opened", at + timedelta(seconds=1))],
            conflict="key",
            returning=("key", "id"),
        )
        session.add(
            Delivery(
                source="github",
                key="k-orm",
                event="issues",
                action=None,
                body=body,
                received_at=at,
                dispatched_at=at,
            )
        )
    assert sorted(key for key, _ in returned) == ["k-1", "k-2"]
    with session_scope(url) as session:
        rows = {d.key: d for d in session.scalars(select(Delivery))}
        ours, orm = rows["k-1"], rows["k-orm"]
        assert (ours.body, ours.action, ours.event) == (body, None, "issues")
        assert ours.received_at.replace(tzinfo=UTC) == orm.received_at.replace(tzinfo=UTC) == at
        assert rows["k-2"].action == "opened" and rows["k-2"].body == b""
        # The ORM's own comparison sees our timestamps like its own.
        later = session.scalars(select(Delivery.key).where(Delivery.received_at > at)).all()
        assert later == ["k-2"]


def test_conflicting_keys_are_skipped_and_not_returned(settings) -> None:
    url = settings.resolved_database_url
    with session_scope(url) as session:
        first = insert_deliveries(session, [NewDelivery("github", "dup", "issues", None, b"1")])
    with session_scope(url) as session:
        again = insert_deliveries(
            session,
            [
                NewDelivery("github", "dup", "issues", None, b"2"),
                NewDelivery("github", "new", "issues", None, b"3"),
                NewDelivery("github", "new", "issues", None, b"4"),  # first of a key wins
            ],
        )
    assert list(first) == ["dup"] and list(again) == ["new"]
    with session_scope(url) as session:
        bodies = dict(session.execute(select(Delivery.key, Delivery.body)).all())
    assert bodies == {"dup": b"1", "new": b"3"}


def test_nothing_to_insert_sends_nothing(settings) -> None:
    with session_scope(settings.resolved_database_url) as session:
        assert (
            insert_new_returning(session, DELIVERIES, [], conflict="key", returning=("id",)) == []
        )


def test_a_new_sqlite_database_has_4_kib_pages(tmp_path) -> None:
    from bot.db.migrate import upgrade

    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    upgrade(url)
    with session_scope(url) as session:
        assert session.execute(text("PRAGMA page_size")).scalar_one() == 4096
        assert session.execute(text("PRAGMA journal_mode")).scalar_one() == "wal"
