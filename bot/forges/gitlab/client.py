"""The python-gitlab client the forge talks through, configured from the settings.

python-gitlab waits out a 429 itself as GitLab asks (``Retry-After``, else ``RateLimit-Reset``)
up to ``gitlab_retry_attempts`` times. A 5xx is retried for reads only: a write that failed
with a 5xx may have happened, so it is left to the outbox (``bot.forges.github.outbox``), whose
next attempt looks for it before posting again.
"""

from __future__ import annotations

from typing import Any

import gitlab

from bot.config import Settings
from bot.forges.gitlab.rest import token


def gitlab_client(settings: Settings) -> gitlab.Gitlab:
    """A client for the configured GitLab (``GitLabNotConfigured`` without a token)."""
    return gitlab.Gitlab(
        settings.gitlab_url,
        private_token=token(settings),
        timeout=settings.gitlab_timeout_s,
        user_agent="repairbot",
        keep_base_url=True,  # behind a proxy, pagination links may name another host
    )


def reading(settings: Settings) -> dict[str, Any]:
    """The keyword arguments of a read: 429s and 5xx retried."""
    return {"retry_transient_errors": True, "max_retries": settings.gitlab_retry_attempts}


def writing(settings: Settings) -> dict[str, Any]:
    """The keyword arguments of a write: 429s waited out, 5xx left to the outbox."""
    return {"retry_transient_errors": False, "max_retries": settings.gitlab_retry_attempts}
