"""deliveries waiting on a CI's or forge's API, and why

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04 13:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: ``delivery_waits`` (bot.db.records.delivery_waits)."""
    op.create_table(
        "delivery_waits",
        sa.Column("delivery_id", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(length=300), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["delivery_id"], ["deliveries.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("delivery_id"),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("delivery_waits")
