"""fix outcomes

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 22:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

JSON_LIST = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    """Apply this revision: how each fix landed (issue 15, quality figures).

    The bot's last pushed head, the head that was merged, whether a human edited it in between
    and the diff of those edits, and the codemods the fix applied. Rows from before this
    revision keep NULL (unknown): their heads were not recorded, so nothing is guessed.
    """
    with op.batch_alter_table("fixes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("bot_head_sha", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("merged_head_sha", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("merged_with_edits", sa.Boolean(), nullable=True))
        batch_op.add_column(sa.Column("human_edit_diff", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("codemods", JSON_LIST, server_default="[]", nullable=False))
        batch_op.create_index(
            "ix_fixes_outcomes",
            ["signature", "state", "merged_with_edits", "number", "codemods"],
        )
    with op.batch_alter_table("verifications", schema=None) as batch_op:
        batch_op.create_index(
            "ix_verifications_outcomes",
            ["fix_id", "verdict", "device", "started_at", "finished_at"],
        )


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("verifications", schema=None) as batch_op:
        batch_op.drop_index("ix_verifications_outcomes")
    with op.batch_alter_table("fixes", schema=None) as batch_op:
        batch_op.drop_index("ix_fixes_outcomes")
        for column in (
            "codemods",
            "human_edit_diff",
            "merged_with_edits",
            "merged_head_sha",
            "bot_head_sha",
        ):
            batch_op.drop_column(column)
