"""Content creation on GitHub exactly once, under the per-minute cap, and never inside a
transaction that holds a lock.

Before a PR, comment, status or reaction is created, a ``github_writes`` row with a stable key
is committed. The row's ``remote_id`` says the write landed. A later attempt with the same key
(a task retried after a crash, a redelivered webhook) returns the recorded result; one whose
row has no result yet first looks on GitHub (``find``) before posting again.

**Deferred writes.** A write asked for inside a caller's transaction (a webhook's handling, a
verdict being recorded) is only recorded there: its row holds the request (``defer``), and once
the transaction commits the ``repairbot.send_github_write`` task sends it. Waiting for GitHub or
for a slot under the cap therefore never holds a database lock: on SQLite a delivery's
``BEGIN IMMEDIATE`` is the one write lock of the whole service, and comment spam that used up
the cap once kept it for minutes (issue 36). The reconciler re-sends deferred writes whose task
was lost.

**The cap.** Each write reserves a slot before it is sent: ``slot_at`` set on its row in a short
transaction that counts the slots of the last minute (serialised: SQLite's write lock, an
advisory lock on PostgreSQL), so every process shares one budget of
``github_writes_per_minute``. Without a slot the write raises ``NoSlot`` and its task is
retried when one frees: a worker never sleeps on a spent budget while other repositories' work
waits behind it.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import utcnow
from bot.db.records.github_writes import GitHubWrite
from bot.db.session import session_scope
from bot.forges.github import retry
from bot.queue.starts import start_send_github_write

KEY_CHARS = 200  # github_writes.key
WINDOW_S = 60.0
_SLOT_LOCK = 7_312_026  # pg_advisory_xact_lock's key for slot reservations
# Another attempt holds this very write's slot (two workers, a redelivery): its answer is
# usually a request away, so poll for it this long before giving up with ``NoSlot``.
IN_FLIGHT_WAIT_S = 10.0
IN_FLIGHT_POLL_S = 0.1


@dataclass(frozen=True)
class Written:
    """Where a write landed on GitHub; ``fresh`` is False when our records already had it."""

    remote_id: str
    url: str | None
    fresh: bool


class NoSlot(RuntimeError):
    """Every slot of the last minute is taken; one frees in ``wait_s`` seconds."""

    def __init__(self, wait_s: float) -> None:
        super().__init__(f"the GitHub write budget is spent: a slot frees in {wait_s:.0f}s")
        self.wait_s = wait_s


def stored_key(key: str) -> str:
    """``key`` as ``github_writes.key`` holds it: itself, or its digest when it would not fit
    (a long repository name); never a truncation, which could make two writes one."""
    if len(key) <= KEY_CHARS:
        return key
    return "sha256:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def writes_in_last_minute(session: Session) -> int:
    """Slots reserved in the last 60 seconds (all processes): the content-creation rate."""
    since = utcnow() - timedelta(seconds=WINDOW_S)
    count = session.scalar(select(func.count(GitHubWrite.id)).where(GitHubWrite.slot_at >= since))
    return int(count or 0)


def defer(
    session: Session,
    *,
    key: str,
    kind: str,
    repository: str,
    target: str,
    request: dict[str, Any],
) -> bool:
    """Record a write to send once ``session`` commits (the send task's work); False when a
    write with this key was recorded before (it is sent, or being sent, once)."""
    key = stored_key(key)
    if session.scalar(select(GitHubWrite.id).where(GitHubWrite.key == key)) is not None:
        return False
    row = GitHubWrite(
        key=key,
        kind=kind,
        repository=repository,
        target=target[:200],
        request=request,
        sent_at=utcnow(),
    )
    try:
        with session.begin_nested():
            session.add(row)
            session.flush()
    except IntegrityError:  # recorded by another transaction meanwhile
        return False
    start_send_github_write(session, row.id)
    return True


def _claim(settings: Settings, key: str, kind: str, repository: str, target: str) -> Written | bool:
    """The recorded result (Written); True when an earlier attempt took a slot and left no
    result (it may have landed); else False (never sent: a new row, or a deferred one)."""
    with session_scope(settings.resolved_database_url) as session:
        row = session.scalar(select(GitHubWrite).where(GitHubWrite.key == key))
        if row is not None:
            if row.remote_id is not None:
                return Written(row.remote_id, row.remote_url, fresh=False)
            return row.slot_at is not None
        try:
            with session.begin_nested():
                session.add(GitHubWrite(key=key, kind=kind, repository=repository, target=target))
        except IntegrityError:
            return True
        return False


def _record(settings: Settings, key: str, written: Written) -> None:
    with session_scope(settings.resolved_database_url) as session:
        row = session.scalar(select(GitHubWrite).where(GitHubWrite.key == key))
        if row is not None:
            row.remote_id, row.remote_url, row.done_at = written.remote_id, written.url, utcnow()
            row.error = None


def has_started(session: Session, key: str) -> bool:
    """Whether the write ``key`` took its slot (it is being sent, or was): it may be on GitHub."""
    row = session.scalar(select(GitHubWrite).where(GitHubWrite.key == stored_key(key)))
    return row is not None and (row.slot_at is not None or row.remote_id is not None)


def reserve_slot(settings: Settings, key: str) -> float:
    """Reserve a slot under the cap for the write ``key``: 0 when this call took one, else how
    many seconds to wait: until the oldest slot of the window frees, or, when ``key`` already
    holds a slot of the last minute (another attempt is sending it, or died doing so), until
    that one expires (then a ``find`` tells whether it landed). The slot of an attempt that
    failed is taken over at once."""
    return _reserve(settings, key)[0]


def _reserve(settings: Settings, key: str) -> tuple[float, bool, datetime | None]:
    """``reserve_slot``'s answer, whether the wait is for another attempt at this write, and
    the slot this call took (None: it took none).

    Race-free across processes: the row is read after the lock that serialises reservations
    (an advisory lock on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite), so of two processes that
    both found the row without a slot (``_claim`` answered False to both) exactly one sets it;
    the other sees it set and waits for that attempt's answer."""
    with session_scope(settings.resolved_database_url) as session:
        if session.get_bind().dialect.name == "postgresql":
            session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SLOT_LOCK})
        row = session.scalar(select(GitHubWrite).where(GitHubWrite.key == key))
        if row is None:
            raise ValueError(f"no write recorded under {key!r}")
        now = utcnow()
        window = now - timedelta(seconds=WINDOW_S)
        if row.remote_id is not None:  # another attempt sent it since: ``_claim`` returns it
            return 0.05, True, None
        held = row.slot_at if row.failed_at is None else None  # a failed attempt's is free
        if held is not None and _aware(held) >= window:
            return max((_aware(held) - window).total_seconds(), 0.05), True, None
        if writes_in_last_minute(session) < settings.github_writes_per_minute:
            row.slot_at, row.failed_at = now, None
            return 0.0, False, now
        oldest = session.scalar(
            select(func.min(GitHubWrite.slot_at)).where(GitHubWrite.slot_at >= window)
        )
        frees = (_aware(oldest) - window).total_seconds() if oldest is not None else 1.0
        return max(frees, 0.05), False, None


def _mark_failed(settings: Settings, key: str, slot: datetime) -> None:
    """Say the attempt at ``key`` that took ``slot`` is over without an answer, unless another
    took the slot over meanwhile (its own attempt is in flight). Best effort: with the database
    down the next attempt waits for the slot to expire, as after a crash."""
    url = settings.resolved_database_url
    with contextlib.suppress(SQLAlchemyError), session_scope(url) as session:
        row = session.scalar(select(GitHubWrite).where(GitHubWrite.key == key))
        held = None if row is None or row.slot_at is None else _aware(row.slot_at)
        if row is not None and row.remote_id is None and held == _aware(slot):
            row.failed_at = utcnow()


def _aware(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; they were stored as UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def write_once(
    settings: Settings,
    *,
    key: str,
    kind: str,
    repository: str,
    target: str,
    post: Callable[[], Written],
    find: Callable[[], Written | None],
    wait: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> Written:
    """Create something on GitHub at most once per ``key`` (see the module docstring), outside
    any transaction: each database step is a short one of its own.

    No slot under the cap: ``NoSlot`` (a task is retried when one frees, so a spent budget never
    holds a worker: ``bot.pipeline.task_base``); with ``wait``, sleep until one frees instead.
    Another attempt sending this same write (another worker or replica): its answer is awaited
    for up to ``IN_FLIGHT_WAIT_S``, then ``NoSlot`` until its slot expires. An attempt that
    failed (it raised: ``failed_at``) is not waited for: GitHub is looked at, then it is sent.
    """
    key = stored_key(key)
    polled, look = 0.0, True
    while True:
        claimed = _claim(settings, key, kind, repository, target[:200])
        if isinstance(claimed, Written):
            return claimed
        if claimed is True and look:  # an earlier attempt left no result: did it land?
            found = find()
            if found is not None:
                _record(settings, key, found)
                return found
        wait_s, in_flight, slot = _reserve(settings, key)
        if slot is not None:
            break
        if in_flight and polled < IN_FLIGHT_WAIT_S:
            sleep(IN_FLIGHT_POLL_S)  # polled for its answer, not looked for on GitHub
            polled, look = polled + IN_FLIGHT_POLL_S, False
            continue
        look = True
        if not wait:
            raise NoSlot(wait_s)
        sleep(min(wait_s, WINDOW_S))
    try:
        written = retry.call(
            post,
            attempts=settings.github_retry_attempts,
            backoff_s=settings.github_retry_backoff_s,
            max_wait_s=settings.github_max_wait_s,
            reconcile=find,
        )
    except Exception:
        _mark_failed(settings, key, slot)
        raise
    _record(settings, key, written)
    return written


def send_or_defer(
    settings: Settings,
    session: Session | None,
    *,
    key: str,
    kind: str,
    repository: str,
    target: str,
    request: dict[str, Any],
    operations: Callable[[], tuple[Callable[[], Written], Callable[[], Written | None]]],
    wait: bool = False,
) -> Written | None:
    """With a ``session``, defer the write into its transaction (None); without, send it now,
    once per ``key`` (``operations`` builds its ``post`` and ``find``). Shared by every forge
    whose writes go through this outbox (GitHub's, GitLab's)."""
    if session is not None:
        defer(session, key=key, kind=kind, repository=repository, target=target, request=request)
        return None
    post, find = operations()
    return write_once(
        settings,
        key=key,
        kind=kind,
        repository=repository,
        target=target,
        post=post,
        find=find,
        wait=wait,
    )


def record_failure(settings: Settings, key: str, error: str) -> None:
    """A deferred write GitHub refused for good (a 4xx): kept with the reason, never re-sent."""
    with session_scope(settings.resolved_database_url) as session:
        row = session.scalar(select(GitHubWrite).where(GitHubWrite.key == key))
        if row is not None:
            row.error = error[:2000]
