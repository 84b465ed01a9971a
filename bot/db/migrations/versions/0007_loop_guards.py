"""loop guards

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 22:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: the bot-caused event budget (issue 15, loop guards)."""
    op.create_table(
        "bot_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repository", sa.String(length=200), nullable=False),
        sa.Column("pr_number", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("event_key", sa.String(length=200), nullable=False),
        sa.Column("caused_by", sa.String(length=200), nullable=False),
        sa.Column("hour", sa.Integer(), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("kind", "event_key", name="uq_bot_events_event"),
        sa.UniqueConstraint(
            "repository", "pr_number", "hour", "slot", name="uq_bot_events_pr_hour_slot"
        ),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("bot_events")
