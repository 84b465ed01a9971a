"""repository policy

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 22:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: autonomy and opt-outs (issue 15): the PRs the bot leaves alone."""
    op.create_table(
        "pr_opt_outs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repository", sa.String(length=200), nullable=False),
        sa.Column("pr_number", sa.Integer(), nullable=False),
        sa.Column("via", sa.String(length=16), nullable=False),
        sa.Column("opted_out_by", sa.String(length=200), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lifted_by", sa.String(length=200), nullable=True),
        sa.Column("lifted_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "uq_pr_opt_outs_active",
        "pr_opt_outs",
        ["repository", "pr_number", "via"],
        unique=True,
        sqlite_where=sa.text("lifted_at IS NULL"),
        postgresql_where=sa.text("lifted_at IS NULL"),
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("uq_pr_opt_outs_active", table_name="pr_opt_outs")
    op.drop_table("pr_opt_outs")
