"""Buildkite's settings: a field group of ``bot.config.Settings`` (read with it, from the same
``REPAIRBOT_`` variables; kept apart only because ``bot/config.py`` is at its line budget)."""

from __future__ import annotations

import json

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator

from bot.config_values import check_webhook_token


class BuildkiteSettings(BaseModel):
    """How Buildkite's webhooks are checked, and how repairbot reads its REST API."""

    buildkite_webhook_token: SecretStr | None = Field(
        default=None,
        description=(
            "The webhook's token (Notification Services → Webhook → Token): compared with "
            "X-Buildkite-Token, or the key of X-Buildkite-Signature; unset: Buildkite refused"
        ),
    )
    buildkite_require_signature: bool = Field(
        default=False,
        description="Refuse deliveries that carry the plain X-Buildkite-Token (signature only)",
    )
    buildkite_signature_max_age_s: float = Field(
        default=300.0,
        gt=0,
        description=(
            "Replay window: a signature whose timestamp is older, or further ahead of our "
            "clock, than this is refused"
        ),
    )
    buildkite_api_url: str = Field(
        default="https://api.buildkite.com", description="Buildkite's REST API base (before /v2)"
    )
    buildkite_api_token: SecretStr | None = Field(
        default=None,
        description="API access token: read_builds, read_build_logs (and write_builds to rebuild)",
    )
    buildkite_repositories: dict[str, str] = Field(
        default_factory=dict,
        description=(
            'JSON: a pipeline\'s repository URL, or "org/pipeline", → the repository the bot '
            "repairs (owner/name on GitHub, or a local path); GitHub URLs map by themselves"
        ),
    )
    buildkite_max_log_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=4096,
        description=(
            "A longer job log is kept as its head and tail (a ranged request), with a note of "
            "the cut"
        ),
    )
    buildkite_retry_attempts: int = Field(
        default=5, ge=1, description="Attempts of a Buildkite request answered 429 or 5xx"
    )
    buildkite_retry_backoff_s: float = Field(
        default=1.0, ge=0, description="First backoff after a 5xx (doubled each time)"
    )
    buildkite_max_wait_s: float = Field(
        default=120.0, ge=0, description="Longer rate-limit waits are left to a later task retry"
    )
    buildkite_timeout_s: float = Field(
        default=30.0, gt=0, description="Timeout of one Buildkite request (each read, for a log)"
    )
    buildkite_rebuild_on_run: bool = Field(
        default=False,
        description=(
            "/bot run on a fix PR that Buildkite built rebuilds that build (PUT .../rebuild) "
            "instead of queueing a verification"
        ),
    )

    @field_validator("buildkite_repositories", mode="before")
    @classmethod
    def _repositories_from_json(cls, value: object) -> object:
        return json.loads(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _real_buildkite_webhook_token_outside_development(self) -> BuildkiteSettings:
        # Named for its CI: Settings inherits every CI's validator, and one name would hide
        # the others.
        environment = getattr(self, "environment", "development")
        check_webhook_token(
            environment, self.buildkite_webhook_token, "REPAIRBOT_BUILDKITE_WEBHOOK_TOKEN"
        )
        return self
