"""Bringing a database to the latest schema with Alembic, from code (no alembic.ini needed)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.exc import OperationalError

from bot.db.outage import database_unreachable
from bot.db.session import engine_for

MIGRATIONS = Path(__file__).parent / "migrations"
START_WAIT_S = 120.0  # how long a starting process waits for an unreachable database
log = logging.getLogger(__name__)


def alembic_config(url: str) -> Config:
    """An Alembic configuration pointing at our migrations and ``url``."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str) -> None:
    """Migrate the database at ``url`` to the newest revision (safe to run every start)."""
    config = alembic_config(url)
    with engine_for(url).begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def upgrade_when_reachable(
    url: str,
    *,
    wait_s: float = START_WAIT_S,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """``upgrade``, waiting up to ``wait_s`` for a database that does not answer yet.

    A process that starts while PostgreSQL restarts (a worker replacing a killed one, a replica
    rolled out during a failover) waits for it instead of exiting: its supervisor would only
    start it again into the same outage. Anything but an unreachable server fails at once.
    """
    deadline = time.monotonic() + wait_s
    pause = 0.5
    while True:
        try:
            upgrade(url)
            return
        except OperationalError as exc:
            if not database_unreachable(exc) or time.monotonic() + pause > deadline:
                raise
            log.warning("database not reachable (%s); trying again in %.1f s", exc.orig, pause)
            sleep(pause)
            pause = min(pause * 2, 5.0)
