"""contract check writes

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03 10:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: what each contract check wrote under the data dir (its budget)."""
    with op.batch_alter_table("contract_checks") as batch:
        batch.add_column(
            sa.Column("written_files", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(
            sa.Column("written_bytes", sa.BigInteger(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("contract_checks") as batch:
        batch.drop_column("written_bytes")
        batch.drop_column("written_files")
