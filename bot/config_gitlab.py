"""GitLab's settings: a field group of ``bot.config.Settings`` (read with it, from the same
``REPAIRBOT_`` variables; kept apart only because ``bot/config.py`` is at its line budget)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr, model_validator

from bot.config_values import check_webhook_token


class GitLabSettings(BaseModel):
    """Where hosted repositories live, and how repairbot reaches GitLab (intake and forge)."""

    forge: Literal["github", "gitlab"] = Field(
        default="github",
        description="The forge a report's hosted repository (owner/name, group/.../project) is on",
    )
    gitlab_url: str = Field(
        default="https://gitlab.com", description="GitLab's base URL (the API is under /api/v4)"
    )
    gitlab_token: SecretStr | None = Field(
        default=None, description="PRIVATE-TOKEN: read_api to fetch traces, api for the forge"
    )
    gitlab_webhook_token: SecretStr | None = Field(
        default=None, description="The webhook's secret token (X-Gitlab-Token); unset: refused"
    )
    gitlab_git_url_template: str | None = Field(
        default=None,
        description="Where fix branches are fetched and pushed; {project} is group/.../name "
        "(default: GITLAB_URL/{project}.git)",
    )
    gitlab_bot_username: str = Field(
        default="repairbot", description="The token's user: its notes are the bot's own"
    )
    gitlab_max_trace_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=4096,
        description="A longer job trace is kept as its head and tail, with a note of the cut",
    )
    gitlab_retry_attempts: int = Field(
        default=5, ge=1, description="Attempts of a GitLab request answered 429 or 5xx"
    )
    gitlab_retry_backoff_s: float = Field(
        default=1.0, ge=0, description="First backoff between GitLab retries (doubled each time)"
    )
    gitlab_max_wait_s: float = Field(
        default=120.0, ge=0, description="Longer rate-limit waits are left to a later task retry"
    )
    gitlab_timeout_s: float = Field(default=30.0, gt=0, description="Timeout of one GitLab request")

    @model_validator(mode="after")
    def _real_gitlab_webhook_token_outside_development(self) -> GitLabSettings:
        # Named for its CI: Settings inherits every CI's validator, and one name would hide
        # the others.
        environment = getattr(self, "environment", "development")
        check_webhook_token(
            environment, self.gitlab_webhook_token, "REPAIRBOT_GITLAB_WEBHOOK_TOKEN"
        )
        return self

    @property
    def gitlab_api_url(self) -> str:
        """The REST API's root."""
        return f"{self.gitlab_url.rstrip('/')}/api/v4"

    def gitlab_remote(self, project: str) -> str:
        """The git URL of GitLab project ``project`` (its path with namespace)."""
        template = self.gitlab_git_url_template or f"{self.gitlab_url.rstrip('/')}/{{project}}.git"
        return template.format(project=project)
