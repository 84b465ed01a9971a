"""fan out notices

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 22:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: the one notice per affected PR (issue 15, fan-out)."""
    op.create_table(
        "pr_notices",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repository", sa.String(length=200), nullable=False),
        sa.Column("pr_number", sa.Integer(), nullable=False),
        sa.Column("fix_id", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("comment_id", sa.String(length=64), nullable=True),
        sa.Column("comment_url", sa.Text(), nullable=True),
        sa.Column("body_digest", sa.String(length=64), nullable=False),
        sa.Column("edits", sa.Integer(), nullable=False),
        sa.Column("rerun_comment_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["fix_id"], ["fixes.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("repository", "pr_number", "fix_id", name="uq_pr_notices_pr_fix"),
    )
    op.create_index("ix_pr_notices_fix_id", "pr_notices", ["fix_id"])


def downgrade() -> None:
    """Revert this revision."""
    op.drop_index("ix_pr_notices_fix_id", table_name="pr_notices")
    op.drop_table("pr_notices")
