"""delivery bodies compressed by PostgreSQL with LZ4, not pglz

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 02:15:00.000000
"""

from __future__ import annotations

from alembic import op
from sqlalchemy.exc import DBAPIError

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: PostgreSQL compresses ``deliveries.body`` with LZ4, or not at all.

    Large bodies arrive already LZ4-compressed (``bot.db.body_codec``), and PostgreSQL's default
    pglz pass over them cost about 7.4 ms of server CPU per megabyte report (bench/webhooks.py:
    0.74 cores at 100 reports/s; with LZ4, 1.4 ms: 0.33 cores at 228/s, as good as no
    compression). LZ4 still shrinks the small bodies stored as received (webhook payloads). A
    server built without LZ4 (a build option) keeps the bodies as given.
    SQLite stores blobs as given and has no such setting.
    """
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    try:
        with bind.begin_nested():
            op.execute("ALTER TABLE deliveries ALTER COLUMN body SET COMPRESSION lz4")
    except DBAPIError:  # "compression method lz4 not supported"
        op.execute("ALTER TABLE deliveries ALTER COLUMN body SET STORAGE EXTERNAL")


def downgrade() -> None:
    """Revert this revision."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE deliveries ALTER COLUMN body SET STORAGE EXTENDED")
        op.execute("ALTER TABLE deliveries ALTER COLUMN body SET COMPRESSION default")
