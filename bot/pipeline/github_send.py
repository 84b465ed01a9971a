"""The ``repairbot.send_github_write`` task: send one deferred GitHub (or GitLab) write.

A write asked for inside a transaction (``bot.forges.github.outbox.defer``) is sent here, after
that transaction committed, holding no database lock. No slot under the per-minute cap: the task
comes back when one frees (a retry with that countdown, never a sleep in the worker). GitHub
refusing for good (a 4xx: a locked PR, a deleted comment) is kept on the row with the reason and
not re-sent; a server error or a dropped connection retries. The reconciler re-sends writes whose
task was lost (``pending_writes``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import requests
from github import GithubException
from gitlab import GitlabError
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import utcnow
from bot.db.records.github_writes import GitHubWrite
from bot.db.session import read_scope, session_scope
from bot.forges.github.api import GitHubApi
from bot.forges.github.outbox import NoSlot, record_failure
from bot.forges.github.retry import RateLimited
from bot.forges.gitlab.api import GitLabApi
from bot.forges.gitlab.write_ops import KINDS as GITLAB_KINDS
from bot.pipeline.task_base import RepairbotTask, TransientError
from bot.queue import names as task_names
from bot.queue.celery_app import app
from bot.queue.starts import start_send_github_write


@dataclass(frozen=True)
class _Pending:
    key: str
    kind: str
    repository: str
    target: str
    request: dict[str, Any]


class ComeBack(Exception):
    """Send this write again in ``after_s`` seconds (no slot, or GitHub asked to wait)."""

    def __init__(self, after_s: float) -> None:
        super().__init__(f"again in {after_s:.0f}s")
        self.after_s = after_s


@app.task(name=task_names.SEND_GITHUB_WRITE, base=RepairbotTask, bind=True)
def send_github_write(self: RepairbotTask, write_id: int) -> str:
    """Send deferred write ``write_id``; safe to run twice (the outbox's key)."""
    try:
        return send_write(self.settings, write_id)
    except ComeBack as exc:
        raise self.retry(countdown=exc.after_s, max_retries=None) from exc


def _pending(settings: Settings, write_id: int) -> _Pending | str:
    with read_scope(settings.resolved_database_url) as session:
        row = session.get(GitHubWrite, write_id)
        if row is None or row.request is None:
            return f"no deferred write #{write_id}"
        if row.remote_id is not None:
            return f"write #{write_id} already sent"
        if row.error is not None:
            return f"write #{write_id} was refused: {row.error}"
        return _Pending(row.key, row.kind, row.repository, row.target, dict(row.request))


def send_write(settings: Settings, write_id: int) -> str:
    """Send deferred write ``write_id`` now; ``ComeBack`` when it must wait, ``TransientError``
    when GitHub or the network failed in a way worth retrying."""
    pending = _pending(settings, write_id)
    if isinstance(pending, str):
        return pending
    api = GitLabApi(settings) if pending.kind in GITLAB_KINDS else GitHubApi(settings)
    try:
        written = api.send_deferred(
            pending.key, pending.kind, pending.repository, pending.target, pending.request
        )
    except NoSlot as exc:
        raise ComeBack(_postponed(settings, write_id, exc.wait_s)) from exc
    except RateLimited as exc:
        raise ComeBack(_postponed(settings, write_id, exc.wait.seconds)) from exc
    except (httpx.TransportError, requests.RequestException) as exc:
        raise TransientError(f"write #{write_id}: {exc}") from exc
    except GithubException as exc:
        if exc.status is None or exc.status >= 500:
            raise TransientError(f"write #{write_id}: GitHub answered {exc.status}") from exc
        record_failure(settings, pending.key, f"GitHub answered {exc.status}: {exc.data}")
        return f"write #{write_id} refused by GitHub ({exc.status})"
    except GitlabError as exc:
        if exc.response_code is None or exc.response_code >= 500 or exc.response_code == 429:
            raise TransientError(f"write #{write_id}: GitLab answered {exc.response_code}") from exc
        record_failure(settings, pending.key, f"GitLab answered {exc.response_code}: {exc}")
        return f"write #{write_id} refused by GitLab ({exc.response_code})"
    return f"write #{write_id} sent: {pending.kind} {written.remote_id}"


def _postponed(settings: Settings, write_id: int, after_s: float) -> float:
    """Note that write ``write_id`` comes back in ``after_s`` seconds: the reconciler leaves
    it alone until then (its retry is not a lost message)."""
    with session_scope(settings.resolved_database_url) as session:
        row = session.get(GitHubWrite, write_id)
        if row is not None:
            row.sent_at = utcnow() + timedelta(seconds=after_s)
    return after_s


def resend_pending_writes(session: Session, *, older_than: timedelta) -> int:
    """Queue again the deferred writes whose task was sent longer than ``older_than`` ago and
    which are neither sent nor refused (their message was lost); how many."""
    since = utcnow() - older_than
    rows = session.scalars(
        select(GitHubWrite).where(
            GitHubWrite.request.is_not(None),
            GitHubWrite.remote_id.is_(None),
            GitHubWrite.error.is_(None),
            GitHubWrite.sent_at < since,
        )
    ).all()
    for row in rows:
        row.sent_at = utcnow()
        start_send_github_write(session, row.id)
    return len(rows)
