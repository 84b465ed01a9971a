"""The base task: retries with backoff on transient errors (and when the GitHub write budget is
spent, once a slot frees; and for as long as the database server cannot be reached), and a
database session per call."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from celery import Task
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.outage import database_unreachable
from bot.db.session import session_scope
from bot.forges.github.outbox import NoSlot
from bot.queue.celery_app import task_settings

OUTAGE_RETRY_MAX_S = 60  # while the database is down, a task comes back at least this often


class TransientError(RuntimeError):
    """A failure worth retrying (a locked database, a busy git repository)."""


class RepairbotTask(Task):  # type: ignore[misc]
    """Owns retries and sessions so that each stage's code is only the stage."""

    abstract = True
    acks_late = True
    autoretry_for = (OperationalError, TransientError)
    retry_backoff = 1
    retry_backoff_max = 60
    retry_jitter = True
    max_retries = 5

    @property
    def settings(self) -> Settings:
        """The settings given to ``configure_tasks`` in this process, else the environment's."""
        return task_settings()

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A committed-on-success session on the configured database."""
        with session_scope(self.settings.resolved_database_url) as session:
            yield session

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except NoSlot as exc:
            # The GitHub write budget is spent: come back when a slot frees, and give the
            # worker to other work meanwhile (a sleep here held every repository behind it).
            raise self.retry_without_limit(exc.wait_s) from exc
        except Exception as exc:
            if not database_unreachable(exc):
                raise
            # PostgreSQL is down or restarting: not this task's fault, and its five quick
            # retries (autoretry_for) may all fall inside one restart. Wait it out.
            wait_s = min(OUTAGE_RETRY_MAX_S, 2**self.request.retries)
            raise self.retry_without_limit(wait_s, exc) from exc

    def retry_without_limit(self, countdown: float, exc: Exception | None = None) -> Exception:
        """The task sent again in ``countdown`` seconds however often it was retried (Celery's
        ``max_retries=None`` means the task's own limit, not none: one more is allowed here)."""
        retried: Exception = self.retry(
            exc=exc, countdown=countdown, max_retries=self.request.retries + 1
        )
        return retried
