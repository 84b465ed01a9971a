"""Alembic environment: runs migrations on the connection or URL handed over by bot.db.migrate."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from bot.db.schema import METADATA

config = context.config
target_metadata = METADATA


def run_migrations() -> None:
    """Run against a given connection (tests, service start) or the configured URL."""
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(
            connection=connection, target_metadata=target_metadata, render_as_batch=True
        )
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.begin() as conn:
        context.configure(connection=conn, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


run_migrations()
