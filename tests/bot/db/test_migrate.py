"""The Alembic history builds the schema the models describe, on SQLite and PostgreSQL."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from bot.db.migrate import alembic_config, upgrade
from bot.db.session import engine_for


def test_migrations_match_the_models(settings):
    url = settings.resolved_database_url
    upgrade(url)  # a second upgrade is a no-op
    config = alembic_config(url)
    with engine_for(url).begin() as connection:
        config.attributes["connection"] = connection
        command.check(config)  # raises when autogenerate would find a difference


def test_postgresql_compresses_delivery_bodies_with_lz4(settings):
    """Large bodies come compressed already (zstd, bot.db.body_codec): PostgreSQL must not pass
    them through pglz (that cost more server CPU than storing the report). SQLite has no such
    setting."""
    url = settings.resolved_database_url
    if not url.startswith("postgresql"):
        assert engine_for(url).dialect.name == "sqlite"
        return
    query = text(
        "SELECT attcompression, attstorage FROM pg_attribute "
        "WHERE attrelid = 'deliveries'::regclass AND attname = 'body'"
    )
    with engine_for(url).connect() as connection:
        compression, storage = connection.execute(query).one()
    # A server built without LZ4 would keep them as given ("", "e"); this machine's has LZ4.
    assert (compression, storage) == ("l", "x")
