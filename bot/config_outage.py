"""Settings for when PostgreSQL or the broker is down, part of ``bot.config.Settings``.

While the database is unreachable every route answers 503 with ``Retry-After`` (GitHub and the
CI redeliver), and how long a request may wait for a connection is bounded. While the broker is
down the API still stores work and answers; sends are bounded and paused after a failure, and the
reconciler sends what is stored once the broker is back (docs/deployment.md, "Outages").
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class OutageSettings(BaseSettings):
    """Where the database and the broker are, and how the service behaves while either is down."""

    model_config = SettingsConfigDict(
        env_prefix="REPAIRBOT_", env_file=None, extra="ignore", use_attribute_docstrings=True
    )

    database_url: str | None = Field(default=None, description="Default: SQLite in data_dir")
    broker_url: str | None = Field(default=None, description="Default: durable files in data_dir")
    database_retry_after_s: int = Field(default=5, ge=1)
    """The Retry-After (seconds) of a 503 answered because the database is unavailable."""
    database_connect_timeout_s: int = Field(default=5, ge=2)
    """PostgreSQL: how long one connection attempt may take (libpq's connect_timeout, added to
    the database URL unless it names one; libpq's minimum is 2). A request waits at most twice
    this for a pooled connection."""
    broker_connect_timeout_s: float = Field(default=2.0, gt=0)
    """How long connecting to the broker may take: a task's send and the /readyz ping."""
    broker_publish_retries: int = Field(default=1, ge=0)
    """How often a failed send is retried at once (Celery's default, 3, held each request about
    0.6 s against a stopped Redis); what stays unsent, the reconciler sends later."""
    broker_visibility_timeout_s: int = Field(default=3600, ge=1)
    """Redis: how long a task a worker took, and has not finished, stays hidden from the other
    workers (tasks are acknowledged when done). A worker paused or cut off for longer has its
    task run again elsewhere; every task is safe to rerun. Longer than the longest task."""
    broker_pause_after_failure_s: float = Field(default=5.0, ge=0)
    """After a send fails, this process skips sends for this long: requests answer at once,
    their stored rows are sent by the reconciler once the broker is back (0: never skip)."""
