"""The GitLab forge's API on python-gitlab: the project, merge requests, notes, statuses.

Every content-creating call goes through the same outbox as GitHub's
(``bot.forges.github.outbox``: a ``github_writes`` row per key, recorded before it is sent,
found again before it is re-sent, under the one per-minute cap); notes and statuses asked for
inside a transaction are deferred until it commits and sent by ``repairbot.send_github_write``.
What is posted on a fix's merge request is mirrored into ``fix_comments``, as on GitHub.
"""

from __future__ import annotations

import hashlib
from typing import Any
from uuid import uuid4

import gitlab
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import Fix, FixComment
from bot.forges.base import StatusState
from bot.forges.fix_rows import status_comment
from bot.forges.github.outbox import Written, defer, send_or_defer
from bot.forges.gitlab.client import gitlab_client, reading
from bot.forges.gitlab.rest import token
from bot.forges.gitlab.write_ops import write_operations


class GitLabApi:
    """GitLab (gitlab.com, a self-managed instance, or our test server) as the forge uses it."""

    name = "gitlab"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._client: gitlab.Gitlab | None = None

    @property
    def client(self) -> gitlab.Gitlab:
        """The python-gitlab client, made on first use (``GitLabNotConfigured`` without a
        token)."""
        if self._client is None:
            self._client = gitlab_client(self.settings)
        return self._client

    def token(self) -> str:
        """The token git fetches and pushes with."""
        return token(self.settings)

    def default_branch(self, project: str) -> str:
        """The project's default branch."""
        found = self.client.projects.get(project, **reading(self.settings))
        return str(found.default_branch or "main")

    def open_merge_request(
        self, project: str, *, key: str, branch: str, base: str, title: str, body: str
    ) -> Written:
        # Called outside any transaction: the outbox commits its own rows.
        """Open a merge request from ``branch`` once per ``key`` (a lost answer, or GitLab's
        409 for an open one from the same branch, finds it by its source branch)."""
        request = {
            "project": project,
            "source_branch": branch,
            "target_branch": base,
            "title": title,
            "description": body,
        }
        written = self._write(None, key, "gitlab-merge-request", project, branch, request)
        assert written is not None
        return written

    def _write(
        self,
        session: Session | None,
        key: str,
        kind: str,
        project: str,
        target: str,
        request: dict[str, Any],
    ) -> Written | None:
        """Defer the write into ``session``'s transaction, or send it now (the outbox)."""
        return send_or_defer(
            self.settings,
            session,
            key=key,
            kind=kind,
            repository=project,
            target=target,
            request=request,
            operations=lambda: write_operations(self.settings, self.client, kind, key, request),
        )

    def send_deferred(
        self, key: str, kind: str, repository: str, target: str, request: dict[str, Any]
    ) -> Written:
        """Send a deferred write now (``NoSlot`` when the per-minute cap is spent)."""
        written = self._write(None, key, kind, repository, target, request)
        assert written is not None
        return written

    # ----- the Forge protocol --------------------------------------------------------------
    def comment(self, session: Session, fix: Fix, body: str, *, key: str | None = None) -> None:
        """Post a note on the fix's merge request (once per ``key``; default: once per body)."""
        if fix.number is None:
            raise ValueError(f"fix #{fix.id} has no merge request on GitLab yet")
        digest = hashlib.sha256(body.encode()).hexdigest()[:24]
        request = {"project": fix.repository, "iid": fix.number, "body": body}
        if defer(
            session,
            key=key or f"gitlab-note:{fix.id}:{digest}",
            kind="gitlab-note",
            repository=fix.repository,
            target=str(fix.number),
            request=request,
        ):
            session.add(FixComment(fix_id=fix.id, kind="comment", body=body))

    def set_status(
        self,
        session: Session,
        fix: Fix,
        *,
        state: StatusState,
        context: str,
        description: str,
        target_url: str | None = None,
    ) -> None:
        """Set a commit status on the fix's head commit (each call a write of its own: the same
        status twice is harmless, and a later one must replace an earlier one)."""
        request = {
            "project": fix.repository,
            "sha": fix.head_sha,
            "state": state,
            "name": context,
            "description": description,
            "target_url": target_url,
        }
        key = f"gitlab-status:{uuid4().hex}"
        self._write(session, key, "gitlab-status", fix.repository, fix.head_sha, request)
        session.add(status_comment(fix, state, context, description, target_url))
