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


def _looks_like_placeholder(secret: str) -> bool:
    """Short secrets, known placeholders and ``change-this-...`` example values."""
    squashed = secret.lower().replace("-", "").replace("_", "")
    return (
        secret in PLACEHOLDER_SECRETS
        or len(secret) < 16
        or squashed.startswith(("changeme", "changethis"))
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
    verify_default_queue: str = Field(
        default="cpu", description="Queue when the failure names no GPU"
    )
    verify_fallback_queues: list[str] = Field(
        default_factory=lambda: ["gpu.any", "cpu"],
        description="Tried in order when no worker claims",
    )
    verify_fallback_after_s: float = 30.0
    verify_timeout_s: float = 1800.0
    verify_reruns: int = Field(
        default=2, ge=0, description="Re-runs of a failing test before it counts"
    )
    runner_dir: Path | None = Field(
        default=None, description="Verification work dirs (default: the system temp dir)"
    )
    worker_queues: list[str] = Field(
        default_factory=lambda: ["repair", "cpu", "gpu.any"],
        description="Queues the embedded worker consumes",
    )
    github_api_url: str = Field(
        default="https://api.github.com", description="REST API base (GHE: https://HOST/api/v3)"
    )
    github_token: SecretStr | None = Field(default=None, description="Token mode: PAT or app token")
    github_app_id: int | None = Field(default=None, description="App mode: the GitHub App's id")
    github_private_key: SecretStr | None = Field(default=None, description="App mode: PEM text")
    github_private_key_path: Path | None = Field(default=None, description="App mode: PEM file")
    github_installation_id: int | None = Field(default=None, description="App mode: installation")
    github_git_url_template: str = Field(
        default="https://github.com/{repository}.git",
        description="Where fix branches are fetched and pushed; {repository} is owner/name",
    )
    github_bot_login: str = Field(
        default="repairbot[bot]", description="Our own login: its comments are never commands"
    )
    github_command_users: list[str] = Field(
        default_factory=list, description="Logins allowed to give /bot commands besides writers"
    )
    github_writes_per_minute: int = Field(
        default=80, ge=1, description="Cap on content-creating requests (PRs, comments, statuses)"
    )
    github_seconds_between_writes: float = Field(default=1.0, ge=0)
    github_retry_attempts: int = Field(default=5, ge=1)
    github_retry_backoff_s: float = Field(default=1.0, ge=0)
    github_max_wait_s: float = Field(
        default=300.0, description="Longer rate-limit waits are left to a later task retry"
    )
    github_timeout_s: int = 30
    github_dedupe_scan_limit: int = Field(
        default=100, ge=0, description="Open PRs examined when looking for one that fixes the same"
    )
    pr_title_template: str = Field(
        default="[{ticket}][{type}] {summary}",
        description="Fix PR title; {ticket} {type} {summary}",
    )
    pr_type: str = "fix"
    pr_ticket_default: str = "None"
    pr_bug_link_pattern: str = Field(
        default=r"https://nvbugs/\d+", description="A bug link in the failure becomes the ticket"
    )
    jenkins_url: str | None = Field(default=None, description="Jenkins base URL (build links)")
    jenkins_user: str | None = None
    jenkins_token: SecretStr | None = None
    jenkins_allowed_hosts: list[str] = Field(
        default_factory=list, description="Hosts testReports may be fetched from"
    )
    jenkins_max_report_bytes: int = 64 * 1024 * 1024
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
            if _looks_like_placeholder(secret.get_secret_value())
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
        return self.broker_url or "durable-files://localhost/"

    @property
    def broker_transport_options(self) -> dict[str, object]:
        """Transport options: the filesystem transport's folder, and a brisk polling interval."""
        if not self.resolved_broker_url.startswith(("durable-files:", "filesystem:")):
            return {}
        folder = (self.data_dir / "broker").resolve()
        folder.mkdir(parents=True, exist_ok=True)
        return {
            "data_folder_in": str(folder),
            "data_folder_out": str(folder),
            "polling_interval": 0.1,
        }

    @property
    def github_enabled(self) -> bool:
        """Whether GitHub credentials (a token, or an App) are configured."""
        return self.github_token is not None or self.github_app_id is not None

    @property
    def github_mirrors_dir(self) -> Path:
        """Bare mirrors of GitHub repositories that fixes are made in."""
        return self.data_dir / "github"

    @property
    def worktrees_dir(self) -> Path:
        """Where repairs check out target repositories."""
        return self.data_dir / "worktrees"


@cache
def get_settings() -> Settings:
    """The process-wide settings, read from the environment once."""
    return Settings()
