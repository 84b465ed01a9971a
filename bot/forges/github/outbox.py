"""Content creation on GitHub exactly once, and under the per-minute cap.

Before a PR, comment, status or reaction is created, a ``github_writes`` row with a stable key is
committed. The row's ``remote_id`` says the write landed. A later attempt with the same key (a
task retried after a crash, a redelivered webhook) returns the recorded result; one whose row has
no result yet first looks on GitHub (``find``) before posting again. The rows of the last minute
are also the content-creation rate, shared by every process on the database.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.github_writes import GitHubWrite
from bot.db.models import utcnow
from bot.db.session import session_scope
from bot.forges.github import retry

KEY_CHARS = 200  # github_writes.key


@dataclass(frozen=True)
class Written:
    """Where a write landed on GitHub; ``fresh`` is False when our records already had it."""

    remote_id: str
    url: str | None
    fresh: bool


def _claim(session: Session, key: str, kind: str, repository: str, target: str) -> Written | bool:
    """The recorded result (Written), True when an earlier attempt left no result, else False."""
    row = session.scalar(select(GitHubWrite).where(GitHubWrite.key == key))
    if row is not None:
        if row.remote_id is not None:
            return Written(row.remote_id, row.remote_url, fresh=False)
        return True
    try:
        with session.begin_nested():
            session.add(GitHubWrite(key=key, kind=kind, repository=repository, target=target[:200]))
    except IntegrityError:
        return True
    return False


def _record(session: Session, key: str, written: Written) -> None:
    row = session.scalar(select(GitHubWrite).where(GitHubWrite.key == key))
    if row is not None:
        row.remote_id, row.remote_url, row.done_at = written.remote_id, written.url, utcnow()


def writes_in_last_minute(session: Session) -> int:
    """Content-creating requests recorded in the last 60 seconds (all processes)."""
    since = utcnow() - timedelta(seconds=60)
    count = session.scalar(
        select(func.count(GitHubWrite.id)).where(GitHubWrite.created_at >= since)
    )
    return int(count or 0)


@contextmanager
def _using(settings: Settings, session: Session | None) -> Iterator[Session]:
    """The caller's session (its transaction commits our rows), else a short one of our own."""
    if session is not None:
        yield session
        return
    with session_scope(settings.resolved_database_url) as own:
        yield own


def wait_for_slot(
    settings: Settings, session: Session | None, sleep: Callable[[float], None] = time.sleep
) -> None:
    """Block until one more write keeps us under ``github_writes_per_minute``."""
    while True:
        with _using(settings, session) as current:
            if writes_in_last_minute(current) <= settings.github_writes_per_minute:
                return
        sleep(1.0)


def stored_key(key: str) -> str:
    """``key`` as ``github_writes.key`` holds it: itself, or its digest when it would not fit
    (a long repository name); never a truncation, which could make two writes one."""
    if len(key) <= KEY_CHARS:
        return key
    return "sha256:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def write_once(
    settings: Settings,
    *,
    session: Session | None,
    key: str,
    kind: str,
    repository: str,
    target: str,
    post: Callable[[], Written],
    find: Callable[[], Written | None],
    look_first: bool = False,
) -> Written:
    """Create something on GitHub at most once per ``key`` (see the module docstring).

    With the caller's ``session`` the row commits with the caller's transaction (SQLite allows
    one writer: a second transaction would wait for the caller's forever); a rolled-back caller
    loses the row, so ``look_first`` asks GitHub before posting for writes that can be found.
    """
    key = stored_key(key)
    with _using(settings, session) as current:
        claimed = _claim(current, key, kind, repository, target)
    if isinstance(claimed, Written):
        return claimed
    if claimed is True or look_first:
        found = find()
        if found is not None:
            with _using(settings, session) as current:
                _record(current, key, found)
            return found
    wait_for_slot(settings, session)
    written = retry.call(
        post,
        attempts=settings.github_retry_attempts,
        backoff_s=settings.github_retry_backoff_s,
        max_wait_s=settings.github_max_wait_s,
        reconcile=find,
    )
    with _using(settings, session) as current:
        _record(current, key, written)
    return written
