"""verification heartbeat

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 09:15:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: a running verification's last sign of life."""
    with op.batch_alter_table("verifications", schema=None) as batch_op:
        batch_op.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("verifications", schema=None) as batch_op:
        batch_op.drop_column("heartbeat_at")
