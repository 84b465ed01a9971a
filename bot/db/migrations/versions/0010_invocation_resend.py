"""invocation resend

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 23:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: what the reconciler needs to re-send a queued command's task."""
    with op.batch_alter_table("command_invocations") as batch:
        batch.add_column(sa.Column("comment_id", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("command_invocations") as batch:
        batch.drop_column("sent_at")
        batch.drop_column("comment_id")
