"""commit statuses by (repository, sha, context), fan-out notices' plan versions

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04 15:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: ``github_statuses`` (bot.db.records.github_statuses), and on
    ``pr_notices`` the version of the newest planned text and the one GitHub shows."""
    op.create_table(
        "github_statuses",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repository", sa.String(length=200), nullable=False),
        sa.Column("sha", sa.String(length=64), nullable=False),
        sa.Column("context", sa.String(length=200), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("target_url", sa.Text(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("shown_version", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("shown_digest", sa.String(length=64), nullable=False, server_default=""),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("repository", "sha", "context", name="uq_github_statuses_context"),
    )
    with op.batch_alter_table("pr_notices") as batch:
        batch.add_column(sa.Column("version", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(
            sa.Column("sent_version", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(
            sa.Column("planned_digest", sa.String(length=64), nullable=False, server_default="")
        )


def downgrade() -> None:
    """Revert this revision."""
    with op.batch_alter_table("pr_notices") as batch:
        batch.drop_column("planned_digest")
        batch.drop_column("sent_version")
        batch.drop_column("version")
    op.drop_table("github_statuses")
