"""delivery bodies stored out of line, uncompressed, on PostgreSQL

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 02:15:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: PostgreSQL no longer compresses ``deliveries.body`` itself.

    Large bodies arrive already LZ4-compressed (``bot.db.body_codec``), and PostgreSQL's own
    pglz pass over them cost about 6 ms of server CPU per megabyte report (measured under
    bench/webhooks.py: 0.74 cores at 100 reports/s, 0.25 cores at 174/s with this). SQLite
    stores blobs as given and has no such setting.
    """
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE deliveries ALTER COLUMN body SET STORAGE EXTERNAL")


def downgrade() -> None:
    """Revert this revision."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE deliveries ALTER COLUMN body SET STORAGE EXTENDED")
