"""Settings: the only place that reads the environment. Variables start with ``REPAIRBOT_``."""

from __future__ import annotations

import json
import tempfile
from functools import cache
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from bot.config_buildkite import BuildkiteSettings
from bot.config_gitlab import GitLabSettings
from bot.config_outage import OutageSettings
from bot.config_sandbox import SandboxSettings
from bot.config_values import (
    COMMAND_PREFIX,
    check_queue,
    looks_like_placeholder,
    resolved_url,
    transport_options,
)


class Settings(SandboxSettings, GitLabSettings, BuildkiteSettings, OutageSettings):
    """Service settings; defaults are the embedded, no-services-needed configuration."""

    model_config = SettingsConfigDict(
        env_prefix="REPAIRBOT_", env_file=None, extra="ignore", use_attribute_docstrings=True
    )

    environment: Literal["development", "test", "production"] = "development"
    """Outside development, placeholder secrets and no REPAIRBOT_REPOSITORY_ROOTS are refused."""
    data_dir: Path = Field(  # never the cwd: run elsewhere, a command would start a fresh db
        default_factory=lambda: Path(platformdirs.user_data_dir("repairbot")),
        description="SQLite files, worktrees, logs (default: the user's data directory)",
    )
    environments_dir: Path = Field(  # outside the data dir: the sandbox sees the one it uses
        default_factory=lambda: Path(platformdirs.user_cache_dir("repairbot")) / "environments",
        description="Targets' test environments ([verify] environment = \"uv\"); the user's cache",
    )
    verify_images_dir: Path | None = None
    """Container images a target may name in [verify] image: <name>.tar (docker save or OCI
    archive; / and : in the name written as _) or an unpacked root filesystem folder."""
    github_webhook_secret: SecretStr = SecretStr("dev-webhook-secret")
    """GitHub's webhook secret (X-Hub-Signature-256)."""
    ci_token: SecretStr = Field(
        default=SecretStr("dev-ci-token"), description="Bearer token for CI"
    )
    ci_pipeline_tokens: dict[str, SecretStr] = Field(
        default_factory=dict, description='Per-pipeline tokens, JSON: {"L0_MergeRequest_PR": "..."}'
    )
    ci_hmac_secret: SecretStr | None = Field(default=None, description="HMAC key for CI posts")
    max_webhook_bytes: int = 25 * 1024 * 1024
    """Largest webhook body read."""
    max_report_bytes: int = 64 * 1024 * 1024
    """Largest CI report body read."""
    max_buffered_body_bytes: int = Field(
        default=192 * 1024 * 1024,
        description="Request bodies being read at one moment, all together; past it: 503",
    )
    read_timeout_s: float = Field(
        default=20.0,
        gt=0,
        description="A request's headers, then its body, must each arrive within this",
    )
    repository_roots: list[Path] = Field(
        default_factory=list,
        description="Local forge: only repositories under these folders (and the data dir's)",
    )
    embedded_worker: bool = True
    """serve runs the workers itself: repair in a thread, verifications in a child process."""
    reconcile_interval_s: float = 30.0
    """How often the reconciler re-sends unfinished work."""
    stale_after_s: float = 120.0
    """When unfinished work counts as lost and is sent again."""
    task_max_retries: int = 5
    """Retries of a failing task before it ends in an error."""
    public_url: str = "http://127.0.0.1:8000"
    """Base of links in PRs; repairbot serve uses the address it serves on unless this is set."""
    verify_default_queue: str = Field(
        default="cpu", description="Queue when the failure names no GPU"
    )
    verify_fallback_queues: list[str] = Field(
        default_factory=lambda: ["gpu.any", "cpu"],
        description="Tried in order when no worker claims",
    )
    verify_fallback_after_s: float = 30.0
    """Seconds before an unclaimed verification moves to the next fallback queue."""
    verify_timeout_s: float = 1800.0
    """Limit per test command of a verification."""
    verify_heartbeat_s: float = Field(
        default=5.0, gt=0, description="How often a running verification records that it lives"
    )
    verify_lost_after_s: float = Field(
        default=30.0,
        gt=0,
        description="A running verification with no heartbeat for this long lost its worker",
    )
    verify_reruns: int = Field(default=2, ge=0, description="Re-runs of a failing test first")
    runner_dir: Path | None = Field(
        default=None, description="Verification work dirs (default: the system temp dir)"
    )
    allow_unsandboxed: bool = Field(
        default=False,
        description=(
            "Development only: run target code (tests, import checks) without bubblewrap when "
            "it is missing; every report then says NOT SANDBOXED"
        ),
    )
    import_preload: list[str] = Field(
        default_factory=lambda: ["torch"],
        description=(
            "Imported once per import check, before any target code (from the service's "
            "interpreter): packages target code imports everywhere and that are slow to import"
        ),
    )
    import_spares: int = Field(
        default=2,
        ge=0,
        description=(
            "Import checks' sandboxes kept started ahead for the next repair attempts "
            "(0: each attempt starts its own)"
        ),
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
    command_prefix: str = Field(
        default="/repairbot",
        description=(
            "What starts repairbot's own commands (apply-fix, ...), valid on any PR; /bot stays "
            "TensorRT-LLM's CI grammar, read on repairbot's fix PRs only"
        ),
    )
    opt_out_label: str = Field(
        default="repairbot:opt-out",
        min_length=1,
        max_length=50,  # GitHub's longest label name
        description="A PR with this label gets no reviews, comments, checks or fix runs",
    )
    trusted_branches: list[str] = Field(
        default_factory=list,
        description="Branch patterns besides the default branch that fixes may be built on",
    )
    github_writes_per_minute: int = Field(
        default=80, ge=1, description="Cap on content-creating requests (PRs, comments, statuses)"
    )
    github_seconds_between_writes: float = Field(default=1.0, ge=0)
    """GitHub writes are at least this far apart (its secondary rate limit)."""
    # Command comments the bot answers (a reply or a reaction) per hour: by a non-collaborator
    # per PR, by one author, on one PR, in one repository (bot.commands.reply_budget).
    reply_budget_stranger_per_pr_hour: int = Field(default=1, ge=0)
    """Command comments answered per hour for a non-collaborator on one PR."""
    reply_budget_per_author_hour: int = Field(default=30, ge=0)
    """Command comments answered per hour for one author."""
    reply_budget_per_pr_hour: int = Field(default=60, ge=0)
    """Command comments answered per hour on one PR."""
    reply_budget_per_repository_hour: int = Field(default=300, ge=0)
    """Command comments answered per hour in one repository."""
    github_retry_attempts: int = Field(default=5, ge=1)
    """Attempts of a GitHub request that failed transiently."""
    github_retry_backoff_s: float = Field(default=1.0, ge=0)
    """First backoff between GitHub retries (doubled each time)."""
    github_max_wait_s: float = Field(
        default=300.0, description="Longer rate-limit waits are left to a later task retry"
    )
    github_timeout_s: int = 30
    """Timeout of one GitHub request."""
    github_dedupe_scan_limit: int = Field(
        default=100, ge=0, description="Open PRs examined when looking for one that fixes the same"
    )
    pr_title_template: str = Field(
        default="[{ticket}][{type}] {summary}",
        description="Fix PR title; {ticket} {type} {summary}",
    )
    pr_type: str = "fix"
    """The type in fix PR titles ([None][type] ...)."""
    pr_ticket_default: str = "None"
    """The ticket in fix PR titles when the failure names none."""
    pr_bug_link_pattern: str = Field(
        default=r"https://nvbugs/\d+", description="A bug link in the failure becomes the ticket"
    )
    jenkins_url: str | None = Field(default=None, description="Jenkins base URL (build links)")
    jenkins_user: str | None = None
    """Jenkins user for fetching console logs."""
    jenkins_token: SecretStr | None = None
    """Jenkins API token for fetching console logs."""
    jenkins_allowed_hosts: list[str] = Field(
        default_factory=list, description="Hosts testReports may be fetched from"
    )
    jenkins_max_report_bytes: int = 64 * 1024 * 1024
    """Largest Jenkins console log fetched."""
    github_actions_logs: bool = Field(
        default=True, description="Fetch and classify the logs of failed GitHub Actions jobs"
    )
    github_actions_log_hosts: list[str] = Field(
        default_factory=lambda: ["actions.githubusercontent.com", "blob.core.windows.net"],
        description="Hosts (and their subdomains) a job-log redirect may lead to; https only",
    )
    github_actions_max_log_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1, description="A longer job log is refused, not truncated"
    )
    contract_check: bool = Field(
        default=True,
        description="Check each PR for the contract violations it introduces (repairbot/contracts)",
    )
    contract_check_max_files: int = Field(
        default=3000, ge=1, description="A PR changing more files gets an error status, unchecked"
    )
    contract_check_max_write_files: int = Field(default=50_000, ge=1)
    """Files one pre-merge contract check may write under the data dir (past it: an error)."""
    contract_check_max_write_bytes: int = Field(default=256 * 1024 * 1024, ge=1)
    """Bytes one pre-merge contract check may write under the data dir (past it: an error)."""
    contract_recheck_max_prs: int = Field(
        default=50, ge=0, description="Open PRs re-checked when a push changes a contract"
    )
    contract_recheck_spacing_s: float = Field(
        default=2.0,
        ge=0,
        description="Seconds between the re-checks one push queues (GitHub's secondary limits)",
    )
    bot_event_budget_per_pr_hour: int = Field(
        default=5,
        ge=0,
        description=(
            "Events caused by a bot (ours or another's) the bot acts on per PR per clock hour; "
            "the rest are recorded and not acted on (loop guard)"
        ),
    )
    branch_bot_commits_limit: int = Field(
        default=3,
        ge=1,
        description="Never push to a branch whose last N commits are bots' (loop guard)",
    )

    @field_validator("worker_queues", "verify_fallback_queues")
    @classmethod
    def _queue_names(cls, value: list[str]) -> list[str]:
        for queue in value:
            check_queue(queue)
        return value

    @field_validator("verify_default_queue")
    @classmethod
    def _queue_name(cls, value: str) -> str:
        check_queue(value)
        return value

    @field_validator("command_prefix")
    @classmethod
    def _command_prefix(cls, value: str) -> str:
        # The repository's own CI bot owns /bot: sharing it would make one comment two commands.
        if not COMMAND_PREFIX.fullmatch(value) or value == "/bot":
            raise ValueError(
                f"REPAIRBOT_COMMAND_PREFIX {value[:40]!r} must be '/' then 1-32 of a-z, 0-9, '-' "
                "(starting with a letter or digit), and not /bot"
            )
        return value

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
            if looks_like_placeholder(secret.get_secret_value())
        ]
        if weak:
            raise ValueError(
                f"set real secrets outside development (at least 16 characters): {', '.join(weak)}"
            )
        if not self.repository_roots:
            # Otherwise anyone with a CI token could point the local forge at any git
            # repository this process can read, the service's own source included.
            raise ValueError(
                "set REPAIRBOT_REPOSITORY_ROOTS outside development: a JSON list of the folders "
                'whose git repositories the local forge may repair, e.g. ["/srv/repos"]'
            )
        return self

    @model_validator(mode="after")
    def _sandbox_only_off_in_development(self) -> Settings:
        # Target code is untrusted: outside development it never runs unconfined.
        if self.allow_unsandboxed and self.environment != "development":
            raise ValueError(
                "REPAIRBOT_ALLOW_UNSANDBOXED is for development only: install bubblewrap "
                "(Debian package bubblewrap) instead"
            )
        return self

    @model_validator(mode="after")
    def _heartbeats_come_more_often_than_the_lost_window(self) -> Settings:
        # Otherwise every healthy verification would look lost between two heartbeats.
        if self.verify_lost_after_s <= 2 * self.verify_heartbeat_s:
            raise ValueError(
                "REPAIRBOT_VERIFY_LOST_AFTER_S must exceed twice REPAIRBOT_VERIFY_HEARTBEAT_S"
            )
        return self

    @model_validator(mode="after")
    def _the_largest_body_fits_the_buffer_cap(self) -> Settings:
        # Otherwise a lone report (or delivery) of an allowed size could never be read.
        if self.max_buffered_body_bytes < max(self.max_report_bytes, self.max_webhook_bytes):
            raise ValueError(
                "REPAIRBOT_MAX_BUFFERED_BODY_BYTES must be at least REPAIRBOT_MAX_REPORT_BYTES "
                "and REPAIRBOT_MAX_WEBHOOK_BYTES"
            )
        return self

    @property
    def resolved_database_url(self) -> str:
        """The database URL, defaulting to a SQLite file in the data directory; PostgreSQL's
        with ``database_connect_timeout_s`` as its connect_timeout unless it names one."""
        return resolved_url(self.database_url, self.data_dir, self.database_connect_timeout_s)

    @property
    def resolved_broker_url(self) -> str:
        """The broker URL, defaulting to kombu's durable filesystem transport in the data dir."""
        return self.broker_url or "durable-files://localhost/"

    @property
    def broker_transport_options(self) -> dict[str, object]:
        """Kombu's transport options for the broker (``config_values.transport_options``)."""
        return transport_options(
            self.resolved_broker_url, self.data_dir, self.broker_visibility_timeout_s
        )

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

    @property
    def contract_trees_dir(self) -> Path:
        """The contract check's one tree on disk per repository (a cache of git trees)."""
        return self.data_dir / "contract-trees"

    @property
    def local_repository_roots(self) -> list[Path]:
        """Where the local forge may find repositories: the data dir, then the configured roots."""
        return [self.data_dir, *self.repository_roots]

    @property
    def private_dirs(self) -> list[Path]:
        """Folders in the data dir that hold our own checkouts: never a report's repository."""
        own = (self.worktrees_dir, self.github_mirrors_dir, self.contract_trees_dir)
        return [*own, self.data_dir / "broker"]

    @property
    def runner_root(self) -> Path:
        """Where verifications check out code: ``runner_dir``, else the system temp dir."""
        return self.runner_dir or Path(tempfile.gettempdir()) / "repairbot-runs"


@cache
def get_settings() -> Settings:
    """The process-wide settings, read from the environment once."""
    return Settings()
