"""GitHub deliveries: dispatch a stored webhook to the handlers registered for its event.

Two phases, so that no database lock is held while anything leaves the database: each handler
reads (a reading session: on SQLite no write lock), asks GitHub, fetches logs and runs git, and
returns its write phase; then one short transaction runs every write phase and records the
delivery's outcome. What a handler posts on GitHub is a deferred write, sent after that commit
(``bot.forges.github.outbox``): under comment spam that spends the write budget, the intake's
writer never waits behind a reply (issue 36).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import httpx
from github import GithubException

from bot.config import Settings
from bot.db.body_codec import BodyCodecError
from bot.db.models import Delivery
from bot.db.records.delivery_waits import clear_wait, note_wait
from bot.db.session import Writes, read_scope, session_scope
from bot.forges.buildkite.rest import (
    BuildkiteNotConfigured,
    BuildkiteRefused,
    BuildkiteUnavailable,
)
from bot.forges.github.client import GitHubNotConfigured
from bot.forges.github.events import PayloadError, load_payload
from bot.forges.github.forge import GitHubForge
from bot.forges.github.job_logs import LogRefused
from bot.forges.github.retry import RateLimited
from bot.forges.gitlab.rest import GitLabNotConfigured, GitLabRefused, GitLabUnavailable
from bot.intake.jenkins import BuildRefused
from bot.intake.route import EventContext, handlers_for
from bot.pipeline.task_base import RepairbotTask, TransientError
from bot.queue import names as task_names
from bot.queue.celery_app import app

OUTCOME_CHARS = 32

# What a handler may raise, by what becomes of the delivery: each CI and forge has its own.
UNCONFIGURED = (GitHubNotConfigured, GitLabNotConfigured, BuildkiteNotConfigured)
REFUSED = (BuildRefused, LogRefused, GitLabRefused, BuildkiteRefused)
UNAVAILABLE = (RateLimited, GitLabUnavailable, BuildkiteUnavailable, httpx.TransportError)


def _forge(settings: Settings) -> GitHubForge:
    return GitHubForge(settings)


@app.task(name=task_names.PROCESS_DELIVERY, base=RepairbotTask, bind=True)
def process_delivery(self: RepairbotTask, delivery_id: int) -> list[str]:
    """Run every handler registered for the delivery's event; record how it ended.

    Outcomes: ``processed``, ``ignored`` (no handler, or nothing for us in it), ``invalid``
    (not a GitHub payload), ``refused`` (a link we will not follow), ``unconfigured``.
    A rate limit or an unreachable service retries the task; the delivery stays stored, and
    waits on the failures page with the reason (``bot.db.records.delivery_waits``).
    """
    return handle_delivery(self.settings, delivery_id)


def _stored(settings: Settings, delivery_id: int) -> tuple[str, dict[str, Any] | None] | None:
    """The delivery's event and payload (None for the payload: not a GitHub payload), or None
    when there is nothing to do (no such delivery, or it was handled)."""
    with read_scope(settings.resolved_database_url) as session:
        delivery = session.get(Delivery, delivery_id)
        if delivery is None or delivery.outcome != "stored":
            return None
        try:
            return delivery.event, load_payload(delivery.content())
        except (PayloadError, BodyCodecError):
            return delivery.event, None


def handle_delivery(settings: Settings, delivery_id: int) -> list[str]:
    """The work of ``process_delivery``: each handler's read phase, then one transaction."""
    stored = _stored(settings, delivery_id)
    if stored is None:
        return []
    event, payload = stored
    notes: list[str] = []
    steps: list[tuple[str, Writes]] = []
    outcome = "invalid"
    if payload is not None:
        handlers = handlers_for(event)
        outcome = "processed" if handlers else "ignored"
        reading = partial(read_scope, settings.resolved_database_url)
        ctx = EventContext(settings, delivery_id, payload, partial(_forge, settings), reading)
        for handler in handlers:
            try:
                step = handler.handle(ctx)
            except UNCONFIGURED as exc:
                outcome = "unconfigured"
                notes.append(f"{handler.name}: {exc}")
            except REFUSED as exc:
                outcome = "refused"
                notes.append(f"{handler.name}: {exc}")
            except UNAVAILABLE as exc:
                reason = f"{handler.name}: {exc}"
                with session_scope(settings.resolved_database_url) as session:
                    note_wait(session, delivery_id, reason)
                raise TransientError(reason) from exc
            except (GithubException, httpx.HTTPStatusError) as exc:
                outcome = "error"
                notes.append(f"{handler.name}: {exc}"[:2000])
            else:
                if isinstance(step, str):
                    notes.append(f"{handler.name}: {step}")
                else:
                    steps.append((handler.name, step))
    with session_scope(settings.resolved_database_url) as session:
        delivery = session.get(Delivery, delivery_id)
        if delivery is None or delivery.outcome != "stored":
            return []  # another attempt recorded it meanwhile: its writes are the ones kept
        notes += [f"{name}: {step(session)}" for name, step in steps]
        delivery.outcome = outcome[:OUTCOME_CHARS]
        clear_wait(session, delivery_id)
    return notes
