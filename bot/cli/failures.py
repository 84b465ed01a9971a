"""Expected failures of any command, as one line and an exit status instead of a traceback.

What an operator can fix gets a line that says what is wrong and what to do: a setting or
environment value the service refuses (exit 2, like any usage error), a service that cannot be
reached or a file the process may not touch (exit 3). Anything else is a bug and keeps its
traceback; ``repairbot --debug ...`` shows the traceback for these too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx
from pydantic import ValidationError
from pydantic_settings import SettingsError

BAD_SETTING = 2
UNAVAILABLE = 3
ENV_PREFIX = "REPAIRBOT_"
# What ``pip install 'repairbot[service]'`` adds to the command line's packages.
SERVICE_MODULES = frozenset(
    {"fastapi", "uvicorn", "sqlalchemy", "alembic", "celery", "kombu", "psycopg", "redis",
     "prometheus_client", "jinja2", "github", "jwt", "markdown_it", "nh3"}
)  # fmt: skip


@dataclass(frozen=True)
class Explained:
    """One line for the operator and the exit status."""

    message: str
    exit_code: int


def _env_name(field: object) -> str:
    return f"{ENV_PREFIX}{str(field).upper()}"


def _settings_error(exc: SettingsError) -> Explained:
    field = re.search(r'field "([^"]+)"', str(exc))
    cause = f": {exc.__cause__}" if exc.__cause__ else ""
    if field is None:
        return Explained(f"invalid setting: {exc}{cause}", BAD_SETTING)
    return Explained(
        f"{_env_name(field.group(1))} cannot be read{cause}; a list or table setting is JSON, "
        f"e.g. {_env_name(field.group(1))}='[\"/srv/repos\"]'",
        BAD_SETTING,
    )


def _validation_error(exc: ValidationError) -> Explained:
    parts = []
    for error in exc.errors():
        message = str(error["msg"]).removeprefix("Value error, ")
        where = ".".join(str(p) for p in error["loc"])
        parts.append(f"{_env_name(where)}: {message}" if where else message)
    return Explained("invalid settings: " + "; ".join(parts), BAD_SETTING)


def explain(exc: BaseException) -> Explained | None:
    """The line and exit status for an expected failure; None for a bug (keep the traceback)."""
    if isinstance(exc, SettingsError):
        return _settings_error(exc)
    if isinstance(exc, ValidationError) and exc.title == "Settings":
        return _validation_error(exc)
    if isinstance(exc, httpx.TransportError):
        try:
            url = f"{exc.request.url.scheme}://{exc.request.url.netloc.decode()}"
        except RuntimeError:  # no request attached
            url = "the service"
        return Explained(
            f"cannot reach {url}: {exc or type(exc).__name__} (is `repairbot serve` running "
            "there? pass its address with --url)",
            UNAVAILABLE,
        )
    if isinstance(exc, ConnectionError):
        return Explained(f"cannot connect: {exc}", UNAVAILABLE)
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in SERVICE_MODULES:
        return Explained(
            f"this command needs the service's packages ({exc.name} is not installed): "
            "pip install 'repairbot[service]'",
            BAD_SETTING,
        )
    if isinstance(exc, PermissionError):
        where = exc.filename or "a file"
        return Explained(
            f"permission denied: {where}: run as a user who may read and write it, or point "
            f"{ENV_PREFIX}DATA_DIR at a directory this user owns",
            UNAVAILABLE,
        )
    return None
