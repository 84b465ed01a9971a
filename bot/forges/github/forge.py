"""The GitHub forge: the GitHub API (``bot.forges.github.api``: PRs, comments, statuses) plus
publishing a fix there (``bot.forges.github.publish``)."""

from __future__ import annotations

from bot.forges.base import Candidate, PublishOutcome
from bot.forges.github.api import GitHubApi
from bot.forges.github.publish import publish
from bot.forges.github.pulls import PullInfo

__all__ = ["GitHubForge", "PullInfo"]


class GitHubForge(GitHubApi):
    """A forge on GitHub (``bot.forges.base.Forge``)."""

    def publish(self, candidate: Candidate) -> PublishOutcome:
        """Link, extend or open: see ``bot.forges.github.publish``."""
        return publish(self.settings, self, candidate)
