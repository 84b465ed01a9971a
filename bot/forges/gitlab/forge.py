"""The GitLab forge: the GitLab API (``bot.forges.gitlab.api``: merge requests, notes,
statuses) plus publishing a fix there (``bot.forges.gitlab.publish``)."""

from __future__ import annotations

from bot.forges.base import Candidate, PublishOutcome
from bot.forges.gitlab.api import GitLabApi
from bot.forges.gitlab.publish import publish


class GitLabForge(GitLabApi):
    """A forge on GitLab (``bot.forges.base.Forge``)."""

    def publish(self, candidate: Candidate) -> PublishOutcome:
        """Link or open: see ``bot.forges.gitlab.publish``."""
        return publish(self.settings, self, candidate)
