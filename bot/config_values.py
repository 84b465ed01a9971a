"""Rules for settings' values, kept apart from the settings model (``bot.config``): what
counts as a placeholder secret, a valid queue name or command prefix, the default database."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from pydantic import SecretStr

from fixers.repo.input_rules import safe_name_problem

COMMAND_PREFIX = re.compile(r"/[a-z0-9][a-z0-9-]{0,31}")
PLACEHOLDER_SECRETS = frozenset(
    {"", "changeme", "change-me", "secret", "dev-webhook-secret", "dev-ci-token"}
)


def check_webhook_token(environment: str, token: SecretStr | None, variable: str) -> None:
    """Refuse a placeholder webhook ``token`` outside development (unset is allowed: the route
    then answers 503)."""
    weak = token is not None and looks_like_placeholder(token.get_secret_value())
    if environment != "development" and weak:
        raise ValueError(f"set a real {variable} outside development (at least 16 characters)")


def looks_like_placeholder(secret: str) -> bool:
    """Short secrets, known placeholders and ``change-this-...`` example values."""
    squashed = secret.lower().replace("-", "").replace("_", "")
    return (
        secret in PLACEHOLDER_SECRETS
        or len(secret) < 16
        or squashed.startswith(("changeme", "changethis"))
    )


def check_queue(name: str) -> None:
    """Queue names become broker queues and, in the filesystem broker, file names."""
    problem = safe_name_problem(name)
    if problem is not None:
        raise ValueError(f"queue {name!r} {problem}")


@cache
def sqlite_url(data_dir: Path) -> str:
    """The SQLite URL of the database in ``data_dir`` (resolved once: every request asks, and
    resolving walks the path's links on disk)."""
    return f"sqlite:///{(data_dir / 'repairbot.db').resolve()}"


def resolved_url(database_url: str | None, data_dir: Path, connect_timeout_s: int) -> str:
    """``database_url``, else SQLite's in ``data_dir``; a PostgreSQL URL gets libpq's
    ``connect_timeout`` unless it names one (without it a connection attempt to a server that
    does not answer waits for the operating system's TCP timeout, minutes)."""
    if database_url is None:
        return sqlite_url(data_dir)
    if not database_url.startswith("postgresql") or "connect_timeout=" in database_url:
        return database_url
    separator = "&" if "?" in database_url else "?"
    return f"{database_url}{separator}connect_timeout={connect_timeout_s}"


def transport_options(
    broker_url: str, data_dir: Path, visibility_timeout_s: int
) -> dict[str, object]:
    """Kombu's transport options for ``broker_url``: Redis's visibility timeout (how long a
    message a worker took but has not acknowledged stays invisible before another worker gets
    it); the filesystem transport's folder in ``data_dir`` and a brisk polling interval."""
    if broker_url.startswith(("redis:", "rediss:")):
        return {"visibility_timeout": visibility_timeout_s}
    if not broker_url.startswith(("durable-files:", "filesystem:")):
        return {}
    folder = (data_dir / "broker").resolve()
    folder.mkdir(parents=True, exist_ok=True)
    return {"data_folder_in": str(folder), "data_folder_out": str(folder), "polling_interval": 0.1}
