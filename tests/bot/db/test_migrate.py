"""The Alembic history builds the schema the models describe, on SQLite and PostgreSQL."""

from __future__ import annotations

from alembic import command

from bot.db.migrate import alembic_config, upgrade
from bot.db.session import engine_for


def test_migrations_match_the_models(settings):
    url = settings.resolved_database_url
    upgrade(url)  # a second upgrade is a no-op
    config = alembic_config(url)
    with engine_for(url).begin() as connection:
        config.attributes["connection"] = connection
        command.check(config)  # raises when autogenerate would find a difference
