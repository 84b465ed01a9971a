"""PostgreSQL: the searched text of each fix PR in a narrow table of its own, lowered

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04 12:00:00.000000

Migration 0014 indexed the searched text on ``fixes`` itself. A term with many old matches made
PostgreSQL recheck every match against the wide ``fixes`` row, case-folding it for ``ILIKE``:
tens of milliseconds at 100,000 fix PRs. ``fixes_search`` holds only the id and the text,
lowered once when written, so a search is a plain ``LIKE`` over a small table (the pg_trgm index
on it where the extension exists, a scan of the small table where it does not). A trigger keeps
it in the same transaction as the row; deleting a fix PR deletes its row. SQLite is unchanged:
its FTS5 table (0014) already is such a table.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

SEARCHED = ("title", "repository", "branch", "violations::text")


def _searched(row: str = "") -> str:
    """The searched columns of ``row`` joined as 0014 joined them: a match cannot span two."""
    return " || chr(31) || ".join(f"{row}.{c}" if row else c for c in SEARCHED)


def _has_trigram_extension() -> bool:
    bind = op.get_bind()
    try:
        with bind.begin_nested():
            bind.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except sa.exc.DBAPIError:
        return False  # not installed or not ours to create: search scans the small table
    return True


def upgrade() -> None:
    """Apply this revision (PostgreSQL only)."""
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP INDEX IF EXISTS ix_fixes_search")
    op.execute(
        "CREATE TABLE fixes_search (id integer PRIMARY KEY "
        "REFERENCES fixes (id) ON DELETE CASCADE, text text NOT NULL)"
    )
    op.execute(
        "CREATE OR REPLACE FUNCTION fixes_search_keep() RETURNS trigger AS $$ BEGIN "
        f"INSERT INTO fixes_search (id, text) VALUES (NEW.id, lower({_searched('NEW')})) "
        "ON CONFLICT (id) DO UPDATE SET text = EXCLUDED.text; "
        "RETURN NULL; END $$ LANGUAGE plpgsql"
    )
    op.execute(
        "CREATE TRIGGER fixes_search_keep AFTER INSERT OR UPDATE OF title, repository, branch, "
        "violations ON fixes FOR EACH ROW EXECUTE FUNCTION fixes_search_keep()"
    )
    # In id order: a scan that may stop early (a count up to its cap) then meets ids as a
    # table filled by the trigger would hold them.
    searched = _searched()
    op.execute(f"INSERT INTO fixes_search SELECT id, lower({searched}) FROM fixes ORDER BY id")
    if _has_trigram_extension():
        # No pending list: with fastupdate GIN queues new entries, each search reads the queue
        # whole and the planner, costing it, chose to scan the table instead (50 ms, not 8, at
        # 100,000 fix PRs). Fix PRs are written one at a time: the direct update is cheap.
        op.execute(
            "CREATE INDEX ix_fixes_search_text ON fixes_search "
            "USING gin (text gin_trgm_ops) WITH (fastupdate = off)"
        )


def downgrade() -> None:
    """Revert this revision: back to 0014's index on ``fixes``."""
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER IF EXISTS fixes_search_keep ON fixes")
    op.execute("DROP FUNCTION IF EXISTS fixes_search_keep()")
    op.execute("DROP TABLE IF EXISTS fixes_search")
    if _has_trigram_extension():
        op.execute(
            f"CREATE INDEX ix_fixes_search ON fixes USING gin (({_searched()}) gin_trgm_ops)"
        )
