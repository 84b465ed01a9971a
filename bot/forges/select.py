"""Which forge a fix lives on."""

from __future__ import annotations

from bot.config import Settings, get_settings
from bot.db.models import Fix
from bot.forges.base import Forge
from bot.forges.github.forge import GitHubForge
from bot.forges.gitlab.forge import GitLabForge
from bot.forges.local.forge import LocalForge


def forge_for(fix: Fix, settings: Settings | None = None) -> Forge:
    """The forge a fix lives on (GitHub or GitLab with ``settings``, default: the process
    settings)."""
    settings = settings or get_settings()
    if fix.forge == "local":
        return LocalForge(settings)
    if fix.forge == "github":
        return GitHubForge(settings)
    if fix.forge == "gitlab":
        return GitLabForge(settings)
    raise ValueError(f"no forge named {fix.forge!r}")
