"""Settings: the only place that reads the environment. Variables start with ``REPAIRBOT_``."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PLACEHOLDER_SECRETS = frozenset(
    {"", "changeme", "change-me", "secret", "dev-webhook-secret", "dev-ci-token"}
)


class Settings(BaseSettings):
    """Service settings; defaults are the embedded, no-services-needed configuration."""

    model_config = SettingsConfigDict(env_prefix="REPAIRBOT_", env_file=None, extra="ignore")

    environment: Literal["development", "test", "production"] = "development"
    data_dir: Path = Field(default=Path(".repairbot"), description="SQLite files, worktrees, logs")
    database_url: str | None = Field(default=None, description="Default: SQLite in data_dir")
    broker_url: str | None = Field(default=None, description="Default: durable files in data_dir")
    github_webhook_secret: SecretStr = SecretStr("dev-webhook-secret")
    ci_token: SecretStr = Field(
        default=SecretStr("dev-ci-token"), description="Bearer token for CI"
    )
    ci_pipeline_tokens: dict[str, SecretStr] = Field(
        default_factory=dict, description='Per-pipeline tokens, JSON: {"L0_MergeRequest_PR": "..."}'
    )
    ci_hmac_secret: SecretStr | None = Field(default=None, description="HMAC key for CI posts")
    max_webhook_bytes: int = 25 * 1024 * 1024
    max_report_bytes: int = 64 * 1024 * 1024
    repository_roots: list[Path] = Field(
        default_factory=list, description="Local forge: only repositories under these folders"
    )
    embedded_worker: bool = True
    reconcile_interval_s: float = 30.0
    stale_after_s: float = 120.0
    task_max_retries: int = 5
    public_url: str = "http://127.0.0.1:8000"
    verify_default_queue: str = Field(default="cpu", description="Queue when the failure names no GPU")
    verify_fallback_queues: list[str] = Field(
        default_factory=lambda: ["gpu.any", "cpu"], description="Tried in order when no worker claims"
    )
    verify_fallback_after_s: float = 120.0
    verify_timeout_s: float = 1800.0
    verify_reruns: int = Field(default=2, ge=0, description="Re-runs of a failing test before it counts")
    worker_queues: list[str] = Field(
        default_factory=lambda: ["repair", "cpu"], description="Queues the embedded worker consumes"
    )
    test_pause_file: Path | None = Field(
        default=None,
        description="Tests only: a repair waits before opening its PR while this exists",
    )

    @field_validator("ci_pipeline_tokens", mode="before")
    @classmethod
    def _tokens_from_json(cls, value: object) -> object:
        return json.loads(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _refuse_placeholders_outside_development(self) -> Settings:
        if self.environment == "development":
            return self
        weak = [
            name
            for name, secret in (
                ("REPAIRBOT_GITHUB_WEBHOOK_SECRET", self.github_webhook_secret),
                ("REPAIRBOT_CI_TOKEN", self.ci_token),
            )
            if secret.get_secret_value() in PLACEHOLDER_SECRETS
            or len(secret.get_secret_value()) < 16
        ]
        if weak:
            raise ValueError(
                f"set real secrets outside development (at least 16 characters): {', '.join(weak)}"
            )
        return self

    @property
    def resolved_database_url(self) -> str:
        """The database URL, defaulting to a SQLite file in the data directory."""
        return self.database_url or f"sqlite:///{(self.data_dir / 'repairbot.db').resolve()}"

    @property
    def resolved_broker_url(self) -> str:
        """The broker URL, defaulting to kombu's durable filesystem transport in the data dir."""
        return self.broker_url or "filesystem://localhost/"

    @property
    def broker_transport_options(self) -> dict[str, object]:
        """Transport options: the filesystem transport's folder, and a brisk polling interval."""
        if not self.resolved_broker_url.startswith("filesystem:"):
            return {}
        folder = (self.data_dir / "broker").resolve()
        folder.mkdir(parents=True, exist_ok=True)
        return {
            "data_folder_in": str(folder),
            "data_folder_out": str(folder),
            "polling_interval": 0.1,
        }

    @property
    def worktrees_dir(self) -> Path:
        """Where repairs check out target repositories."""
        return self.data_dir / "worktrees"


@cache
def get_settings() -> Settings:
    """The process-wide settings, read from the environment once."""
    return Settings()
