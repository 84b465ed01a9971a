"""GitHub deliveries: dispatch a stored webhook to the handlers registered for its event."""

from __future__ import annotations

from functools import partial

import httpx
from github import GithubException

from bot.config import Settings
from bot.db.body_codec import BodyCodecError
from bot.db.models import Delivery
from bot.forges.github.client import GitHubNotConfigured
from bot.forges.github.events import PayloadError, load_payload
from bot.forges.github.forge import GitHubForge
from bot.forges.github.job_logs import LogRefused
from bot.forges.github.retry import RateLimited
from bot.intake.jenkins import BuildRefused
from bot.intake.route import EventContext, handlers_for
from bot.pipeline.task_base import RepairbotTask, TransientError
from bot.queue import names as task_names
from bot.queue.celery_app import app

OUTCOME_CHARS = 32


def _forge(settings: Settings) -> GitHubForge:
    return GitHubForge(settings)


@app.task(name=task_names.PROCESS_DELIVERY, base=RepairbotTask, bind=True)
def process_delivery(self: RepairbotTask, delivery_id: int) -> list[str]:
    """Run every handler registered for the delivery's event; record how it ended.

    Outcomes: ``processed``, ``ignored`` (no handler, or nothing for us in it), ``invalid``
    (not a GitHub payload), ``refused`` (a link we will not follow), ``unconfigured``.
    A rate limit or an unreachable service retries the task; the delivery stays stored.
    """
    settings = self.settings
    notes: list[str] = []
    with self.session() as session:
        delivery = session.get(Delivery, delivery_id)
        if delivery is None or delivery.outcome != "stored":
            return notes
        try:
            payload = load_payload(delivery.content())
        except (PayloadError, BodyCodecError):
            delivery.outcome = "invalid"
            return notes
        handlers = handlers_for(delivery.event)
        outcome = "processed" if handlers else "ignored"
        for handler in handlers:
            ctx = EventContext(session, settings, delivery.id, payload, partial(_forge, settings))
            try:
                notes.append(f"{handler.name}: {handler.handle(ctx)}")
            except GitHubNotConfigured as exc:
                outcome = "unconfigured"
                notes.append(f"{handler.name}: {exc}")
            except (BuildRefused, LogRefused) as exc:
                outcome = "refused"
                notes.append(f"{handler.name}: {exc}")
            except (RateLimited, httpx.TransportError) as exc:
                raise TransientError(f"{handler.name}: {exc}") from exc
            except (GithubException, httpx.HTTPStatusError) as exc:
                outcome = "error"
                notes.append(f"{handler.name}: {exc}"[:2000])
        delivery.outcome = outcome[:OUTCOME_CHARS]
    return notes
