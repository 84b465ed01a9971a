"""Commit statuses exactly once per change, the last one asked for shown last.

A status asked for is first mapped to a version of its (repository, sha, context) row
(``bot.db.records.github_statuses``), in one transaction that locks the row: a request equal to
the row's is the current version (the same outbox write: two contract checks of one head at
once, or a redelivery, POST it once); a different one bumps the version (a new write). The
outbox key is ``status:{repository}:{sha}:{context}:{version}``.

Order: GitHub shows the status POSTed last. A write whose version is no longer the row's is
dropped unsent (``superseded``). One that was current when it was sent but was overtaken while
its POST was in flight may have landed after the newer one; if that newer one had already taken
its slot (it may be on GitHub before ours), the newest status is sent once more under a new
version (``overtaken``). So concurrent changes can cost one extra POST of the newest status,
never leave an older one showing. A version equal to the one GitHub shows already (the
versions between them were dropped unsent: pending, then success superseded by pending again)
is not POSTed (``shown``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import utcnow
from bot.db.records.github_statuses import GitHubStatus
from bot.db.session import session_scope
from bot.forges.github.outbox import Written, defer, has_started

SUPERSEDED = "superseded"  # the remote id recorded for a status dropped unsent
SHOWN = "shown"  # the remote id recorded for a status GitHub already shows, not POSTed again


def status_key(repository: str, sha: str, context: str, version: int) -> str:
    """The outbox key of version ``version`` of a status."""
    return f"status:{repository}:{sha}:{context}:{version}"


def status_digest(request: dict[str, Any]) -> str:
    """What a status says (state, description, link), as a digest."""
    said = [request["state"], request["description"], request["target_url"]]
    return hashlib.sha256(json.dumps(said).encode()).hexdigest()[:64]


def _locked(session: Session, repository: str, sha: str, context: str) -> GitHubStatus | None:
    return session.scalar(
        select(GitHubStatus)
        .where(
            GitHubStatus.repository == repository,
            GitHubStatus.sha == sha,
            GitHubStatus.context == context,
        )
        .with_for_update()
    )


def _version(session: Session, request: dict[str, Any]) -> int:
    repository, sha, context = request["repository"], request["sha"], request["context"]
    asked = (request["state"], request["description"], request["target_url"])
    row = _locked(session, repository, sha, context)
    if row is None:
        try:
            with session.begin_nested():
                session.add(
                    GitHubStatus(
                        repository=repository,
                        sha=sha,
                        context=context,
                        state=asked[0],
                        description=asked[1],
                        target_url=asked[2],
                        version=1,
                    )
                )
            return 1
        except IntegrityError:  # another transaction recorded it first: read theirs, locked
            row = _locked(session, repository, sha, context)
            assert row is not None
    if (row.state, row.description, row.target_url) != asked:
        row.state, row.description, row.target_url = asked
        row.version += 1
        row.updated_at = utcnow()
    return row.version


def requested(settings: Settings, session: Session | None, request: dict[str, Any]) -> int:
    """The version of the status ``request`` (``repository``, ``sha``, ``context``, ``state``,
    ``description``, ``target_url``): in ``session``'s transaction, or in a short one of its
    own committed before anything is sent."""
    if session is not None:
        return _version(session, request)
    with session_scope(settings.resolved_database_url) as own:
        return _version(own, request)


def _current(settings: Settings, request: dict[str, Any]) -> GitHubStatus | None:
    with session_scope(settings.resolved_database_url) as session:
        row = _locked(session, request["repository"], request["sha"], request["context"])
        if row is not None:
            session.expunge(row)
        return row


def guarded(
    settings: Settings, request: dict[str, Any], post: Callable[[], Written]
) -> Callable[[], Written]:
    """``post`` that first checks that its version is still the newest (else it is dropped)."""
    if "version" not in request:  # a write recorded before statuses had versions
        return post

    def checked() -> Written:
        row = _current(settings, request)
        version = int(request["version"])
        if row is not None and row.version != version:
            return Written(SUPERSEDED, None, fresh=True)
        shown = row is not None and row.shown_digest == status_digest(request)
        if row is not None and shown and row.shown_version < version:
            return Written(SHOWN, None, fresh=True)
        return post()

    return checked


def overtaken(
    settings: Settings, request: dict[str, Any], written: Written
) -> dict[str, Any] | None:
    """After a status was POSTed: the request sent again (deferred: its task sends it) when a
    newer version was asked for and had taken its slot while ours was in flight (it may be on
    GitHub before ours); None when ours is the newest, or the newest is still to be sent (it
    will land after ours)."""
    if "version" not in request or written.remote_id in (SUPERSEDED, SHOWN) or not written.fresh:
        return None
    repository, sha, context = request["repository"], request["sha"], request["context"]
    with session_scope(settings.resolved_database_url) as session:
        row = _locked(session, repository, sha, context)
        if row is not None and int(request["version"]) > row.shown_version:
            row.shown_version, row.shown_digest = int(request["version"]), status_digest(request)
        if row is None or row.version <= int(request["version"]):
            return None
        if not has_started(session, status_key(repository, sha, context, row.version)):
            return None
        row.version += 1
        # Ours may have landed last: what GitHub shows is unknown, so the newest is POSTed.
        row.shown_digest = ""
        again = {
            **request,
            "state": row.state,
            "description": row.description,
            "target_url": row.target_url,
            "version": row.version,
        }
        # Recorded, not sent here: its send task retries and the reconciler re-sends it, so a
        # refusal or a crash now cannot lose the newest status.
        key = status_key(repository, sha, context, row.version)
        defer(session, key=key, kind="status", repository=repository, target=sha, request=again)
        return again
