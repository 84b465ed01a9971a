"""Group commit: one writer thread per database runs every write waiting at that moment in one
transaction, so a burst of requests costs one commit (one fsync) instead of one each.

Writes of one :class:`WriteKind` run together (one multi-row INSERT for a batch of deliveries,
say). A batch first runs without savepoints. If anything in it raises, it is rolled back and run
again with each write alone in its own SAVEPOINT: the one that raises is rolled back by itself
and its caller gets the exception, while the others still commit. Writes must therefore be safe
to run twice: they are plain functions of their request and the database.

No caller hears back before the batch's COMMIT returned, so nothing is acknowledged before it is
durable. If the COMMIT itself fails, every caller in the batch gets that error: none of their
rows were stored.

What a commit releases (the tasks ``bot.queue.enqueue`` sends once it commits) is left in the
session's ``AFTER_COMMIT_WORK`` list rather than done inside the COMMIT, and a second thread does
it, then answers the batch's callers: callers still hear back only after their tasks were sent,
but the writer is already committing the next batch meanwhile. Sending a task to the embedded
broker costs about 2 ms (Celery's message, a file written and renamed), which in the writer
had capped one-megabyte CI reports near 130 per second.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from functools import cache
from typing import Any, Generic, TypeVar

from sqlalchemy.orm import Session, sessionmaker

from bot.db.session import session_factory

ItemT = TypeVar("ItemT")
T = TypeVar("T")
MAX_BATCH = 128  # writes per transaction: bounds a batch's memory (CI reports carry their body)
RELEASE_BACKLOG = 2  # committed batches waiting for their work and answers, at most
# session.info key: a list of callables to run after the COMMIT, before the callers hear back.
AFTER_COMMIT_WORK = "repairbot_after_commit_work"
log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class WriteKind(Generic[ItemT, T]):
    """Writes that run together: ``run_all(session, items)`` gives one result per item, in order."""

    name: str
    run_all: Callable[[Session, list[ItemT]], list[T]]


def _run_each(session: Session, writes: list[Callable[[Session], Any]]) -> list[Any]:
    return [write(session) for write in writes]


ONE_BY_ONE: WriteKind[Callable[[Session], Any], Any] = WriteKind("function", _run_each)


@dataclass(frozen=True, eq=False)
class _Write(Generic[ItemT, T]):
    kind: WriteKind[ItemT, T]
    item: ItemT
    # A thread waits on ``future``; a coroutine on ``waiter``, resolved in its own loop.
    future: Future[T] | None = None
    waiter: asyncio.Future[T] | None = None


_Outcome = tuple[_Write[Any, Any], Any, BaseException | None]
_Released = tuple[list[_Outcome], list[Callable[[], None]]]


@dataclass
class BatchStats:
    """What the writer has done: batches committed, writes in them, and the largest batch."""

    batches: int = 0
    writes: int = 0
    largest: int = 0

    def add(self, size: int) -> None:
        """Count one committed batch of ``size`` writes."""
        self.batches += 1
        self.writes += size
        self.largest = max(self.largest, size)


class GroupCommitter:
    """The writer for one database: submit a write, wait on the future it returns."""

    def __init__(self, factory: sessionmaker[Session], *, max_batch: int = MAX_BATCH) -> None:
        self._factory = factory
        self._max_batch = max_batch
        self._waiting: queue.SimpleQueue[list[_Write[Any, Any]] | None] = queue.SimpleQueue()
        # Writes from coroutines, gathered per event loop until the loop's current turn ends.
        self._gathered: dict[asyncio.AbstractEventLoop, list[_Write[Any, Any]]] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        # Committed batches: their after-commit work, then their callers' answers. Bounded: a
        # stalled broker stops the writer after two batches, instead of it committing on and
        # holding every batch's bodies (up to 128 MB each) in memory.
        self._released: queue.Queue[_Released | None] = queue.Queue(maxsize=RELEASE_BACKLOG)
        self._releaser: threading.Thread | None = None
        self.stats = BatchStats()

    def submit(self, run: Callable[[Session], T]) -> Future[T]:
        """Queue ``run(session)``; the future resolves once its batch has committed."""
        return self.submit_item(ONE_BY_ONE, run)

    def submit_item(self, kind: WriteKind[ItemT, T], item: ItemT) -> Future[T]:
        """Queue ``item`` to be written with the others of ``kind`` in the next batch."""
        future: Future[T] = Future()
        self._ensure_started()
        self._waiting.put([_Write(kind, item, future=future)])
        return future

    async def write(self, kind: WriteKind[ItemT, T], item: ItemT) -> T:
        """:meth:`submit_item` for a coroutine: its result once its batch has committed.

        The writes a loop makes in one turn reach the writer together, and the writer wakes
        each loop once per batch: the two threads trade places once per batch, not per write.
        """
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[T] = loop.create_future()
        gathered = self._gathered.get(loop)
        if gathered is None:
            gathered = self._gathered[loop] = []
            loop.call_soon(self._hand_over, loop)
        gathered.append(_Write(kind, item, waiter=waiter))
        return await waiter

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        writes = self._gathered.pop(loop)
        self._ensure_started()
        self._waiting.put(writes)

    def close(self) -> None:
        """Finish the writes already queued and answer them, then stop both threads."""
        with self._lock:
            thread, self._thread = self._thread, None
            releaser, self._releaser = self._releaser, None
        if thread is not None:
            self._waiting.put(None)
            thread.join()
        if releaser is not None:
            self._released.put(None)
            releaser.join()

    def _ensure_started(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="repairbot-group-commit", daemon=True
                )
                self._releaser = threading.Thread(
                    target=self._release, name="repairbot-group-release", daemon=True
                )
                self._thread.start()
                self._releaser.start()

    def _release(self) -> None:
        while (released := self._released.get()) is not None:
            outcomes, work = released
            for job in work:
                try:
                    job()
                except Exception:  # the rows are committed: a failed send is the reconciler's
                    log.warning("work after a group commit failed", exc_info=True)
            _deliver(outcomes)

    def _run(self) -> None:
        while True:
            first = self._waiting.get()
            if first is None:
                return
            batch = list(first)
            while len(batch) < self._max_batch:
                try:
                    following = self._waiting.get_nowait()
                except queue.Empty:
                    break
                if following is None:
                    self._waiting.put(None)  # stop after this batch
                    break
                batch += following
            self._write(batch)

    def _write(self, batch: list[_Write[Any, Any]]) -> None:
        live = [
            write
            for write in batch
            if write.future is None or write.future.set_running_or_notify_cancel()
        ]
        try:
            released = self._attempt(live, isolated=False)
        except Exception as exc:
            # Alone, the error is its own (from the write or its COMMIT); else find whose it is.
            released = ([(live[0], None, exc)], []) if len(live) == 1 else self._isolated(live)
        else:
            self.stats.add(len(live))
        self._released.put(released)

    def _isolated(self, writes: list[_Write[Any, Any]]) -> _Released:
        """The batch again, a SAVEPOINT per write; everyone gets the error if its COMMIT fails."""
        try:
            released = self._attempt(writes, isolated=True)
        except Exception as exc:  # the COMMIT (or the connection) failed: nothing was stored
            log.warning("group commit of %d writes failed", len(writes), exc_info=True)
            return [(write, None, exc) for write in writes], []
        self.stats.add(len(writes))
        return released

    def _attempt(self, writes: list[_Write[Any, Any]], *, isolated: bool) -> _Released:
        """Run ``writes`` in one transaction and commit it (see the module's docstring); the
        outcomes, and the work the commit released."""
        session = self._factory()
        work: list[Callable[[], None]] = []
        session.info[AFTER_COMMIT_WORK] = work
        try:
            if isolated:
                outcomes = [_run_in_savepoint(session, write) for write in writes]
            else:
                outcomes = _run_by_kind(session, writes)
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.info.pop(AFTER_COMMIT_WORK, None)
            session.close()
        return outcomes, work


def _deliver(outcomes: list[_Outcome]) -> None:
    """Hand each caller its result or error: threads directly, each event loop in one call."""
    by_loop: defaultdict[asyncio.AbstractEventLoop, list[_Outcome]] = defaultdict(list)
    for outcome in outcomes:
        write, result, error = outcome
        if write.future is not None and error is None:
            write.future.set_result(result)
        elif write.future is not None:
            write.future.set_exception(error)
        if write.waiter is not None:
            by_loop[write.waiter.get_loop()].append(outcome)
    for loop, of_loop in by_loop.items():
        with contextlib.suppress(RuntimeError):  # that loop has closed: its callers are gone
            loop.call_soon_threadsafe(_resolve_waiters, of_loop)


def _resolve_waiters(outcomes: list[_Outcome]) -> None:
    """In the waiters' event loop: wake each coroutine (unless it stopped waiting)."""
    for write, result, error in outcomes:
        waiter = write.waiter
        if waiter is None or waiter.done():
            continue
        if error is None:
            waiter.set_result(result)
        else:
            waiter.set_exception(error)


def _run_by_kind(session: Session, writes: list[_Write[Any, Any]]) -> list[_Outcome]:
    """Each kind's writes in one call; the first exception aborts the batch."""
    by_kind: dict[WriteKind[Any, Any], list[_Write[Any, Any]]] = {}
    for write in writes:
        by_kind.setdefault(write.kind, []).append(write)
    outcomes: list[_Outcome] = []
    for kind, of_kind in by_kind.items():
        results = kind.run_all(session, [write.item for write in of_kind])
        if len(results) != len(of_kind):
            raise RuntimeError(f"{kind.name}: {len(results)} results for {len(of_kind)} writes")
        outcomes += [(write, result, None) for write, result in zip(of_kind, results, strict=True)]
    return outcomes


def _run_in_savepoint(session: Session, write: _Write[Any, Any]) -> _Outcome:
    """Run one write in its own SAVEPOINT; an exception rolls back that write only."""
    try:
        with session.begin_nested():
            (result,) = write.kind.run_all(session, [write.item])
            session.flush()
    except Exception as exc:  # handed to its caller; the batch goes on
        return write, None, exc
    return write, result, None


@cache
def committer_for(url: str) -> GroupCommitter:
    """The one writer per process for the database at ``url``."""
    return GroupCommitter(session_factory(url))
