"""Bringing a database to the latest schema with Alembic, from code (no alembic.ini needed)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from bot.db.session import engine_for

MIGRATIONS = Path(__file__).parent / "migrations"


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
