"""the GitHub outbox: when the attempt holding a write's slot failed

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04 19:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: ``github_writes.failed_at`` (bot.db.records.github_writes)."""
    with op.batch_alter_table("github_writes") as batch:
        batch.add_column(sa.Column("failed_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("github_writes") as batch:
        batch.drop_column("failed_at")
