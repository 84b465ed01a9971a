"""delivery body codec

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 19:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: how each delivery body is stored (rows so far: as received)."""
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("body_codec", sa.String(length=8), server_default="raw", nullable=False)
        )


def downgrade() -> None:
    """Revert this revision (compressed bodies would be unreadable to the older schema's code)."""
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.drop_column("body_codec")
