"""Alembic environment: runs migrations on the connection or URL handed over by bot.db.migrate."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from bot.db.schema import METADATA

config = context.config
target_metadata = METADATA
# Made by migration 0014 in each database's own SQL (an FTS5 table and its shadow tables on
# SQLite, a trigram index on PostgreSQL), outside the models: not for autogenerate to compare.
UNMODELLED = "fixes_search"


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Leave the search index's tables and index out of autogenerate's comparison."""
    return not (name or "").startswith(UNMODELLED) and not (name or "").startswith(
        "ix_fixes_search"
    )


def run_migrations() -> None:
    """Run against a given connection (tests, service start) or the configured URL."""
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=True,
            include_name=include_name,
        )
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.begin() as conn:
        context.configure(
            connection=conn,
            target_metadata=target_metadata,
            render_as_batch=True,
            include_name=include_name,
        )
        with context.begin_transaction():
            context.run_migrations()


run_migrations()
