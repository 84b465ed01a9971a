"""suppressions

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 20:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: the human decisions the bot keeps (a closed fix, a revert)."""
    op.create_table(
        "suppressions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repository", sa.String(length=200), nullable=False),
        sa.Column("dedupe_key", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.String(length=32), nullable=False),
        sa.Column("fix_id", sa.Integer(), nullable=True),
        sa.Column("decided_by", sa.String(length=200), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("held_runs", sa.Integer(), nullable=False),
        sa.Column("lifted_by", sa.String(length=200), nullable=True),
        sa.Column("lifted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["fix_id"], ["fixes.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_suppressions_fix_id", "suppressions", ["fix_id"])
    op.create_index(
        "uq_suppressions_active_key",
        "suppressions",
        ["repository", "dedupe_key"],
        unique=True,
        sqlite_where=sa.text("lifted_at IS NULL"),
        postgresql_where=sa.text("lifted_at IS NULL"),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("uq_suppressions_active_key", table_name="suppressions")
    op.drop_index("ix_suppressions_fix_id", table_name="suppressions")
    op.drop_table("suppressions")
