"""The local forge: a fix is a branch in the target repository plus a ``fixes`` row, and its PR
conversation and statuses are ``fix_comments`` rows."""

from __future__ import annotations

from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import Fix, FixComment
from bot.forges.base import Candidate, PublishOutcome, StatusState
from bot.forges.fix_rows import status_comment
from bot.forges.local.publish import publish


class LocalForge:
    """The local forge (``bot.forges.base.Forge``)."""

    name = "local"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def publish(self, candidate: Candidate) -> PublishOutcome:
        """Open the candidate as a local fix, or link it to the open one that covers it."""
        return publish(self.settings, candidate)

    def comment(self, session: Session, fix: Fix, body: str, *, key: str | None = None) -> None:
        """Record a comment on the fix (``key`` is not needed: the row commits with the caller)."""
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
        """Record a commit status on the fix."""
        session.add(status_comment(fix, state, context, description, target_url))
