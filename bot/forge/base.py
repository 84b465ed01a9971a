"""What every forge offers the pipeline once a fix exists: talk on the PR, set a commit status."""

from __future__ import annotations

from typing import Literal, Protocol

from sqlalchemy.orm import Session

from bot.config import Settings, get_settings
from bot.db.models import Fix, FixComment

StatusState = Literal["pending", "success", "failure", "error"]


class Forge(Protocol):
    """The PR-side operations of a forge (local git, GitHub)."""

    name: str

    def comment(self, session: Session, fix: Fix, body: str, *, key: str | None = None) -> None:
        """Post a comment on the fix's PR (at most once per ``key`` where the forge can tell)."""

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
        body = description if target_url is None else f"{description} ({target_url})"
        session.add(
            FixComment(fix_id=fix.id, kind="status", context=context, state=state, body=body)
        )


def forge_for(fix: Fix, settings: Settings | None = None) -> Forge:
    """The forge a fix lives on (GitHub with ``settings``, default: the process settings)."""
    if fix.forge == "local":
        return LocalForge()
    if fix.forge == "github":
        from bot.forge.github import GitHubForge

        return GitHubForge(settings or get_settings())
    raise ValueError(f"no forge named {fix.forge!r}")
