"""What every forge offers the pipeline once a fix exists: talk on the PR, set a commit status."""

from __future__ import annotations

from typing import Literal, Protocol

from sqlalchemy.orm import Session

from bot.db.models import Fix, FixComment

StatusState = Literal["pending", "success", "failure", "error"]


class Forge(Protocol):
    """The PR-side operations of a forge (local git, GitHub)."""

    name: str

    def comment(self, session: Session, fix: Fix, body: str) -> None:
        """Post a comment on the fix's PR."""

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
        """Set a commit status on the fix's head commit."""


class LocalForge:
    """The local forge's PR conversation is the ``fix_comments`` table."""

    name = "local"

    def comment(self, session: Session, fix: Fix, body: str) -> None:
        """Record a comment on the fix."""
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
        body = description if target_url is None else f"{description} ({target_url})"
        session.add(FixComment(fix_id=fix.id, kind="status", context=context, state=state, body=body))


def forge_for(fix: Fix) -> Forge:
    """The forge a fix lives on."""
    if fix.forge == "local":
        return LocalForge()
    raise ValueError(f"no forge named {fix.forge!r}")
