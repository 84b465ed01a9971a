"""deferred github writes, reply budgets, suppressed violation keys

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: a write's slot under the cap, deferred writes' requests, and
    whether each command was answered (the reply budgets), and the violations a suppression
    holds one by one, the contract checks queued per PR, the head a fan-out notice's PR failed
    at, and the work a delivery would do (coalescing a flood).

    Rows written before it took their slot when they were created: ``slot_at`` starts there.
    """
    with op.batch_alter_table("github_writes") as batch:
        batch.add_column(sa.Column("slot_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("request", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("error", sa.Text(), nullable=True))
        batch.create_index("ix_github_writes_slot_at", ["slot_at"])
        batch.create_index("ix_github_writes_sent_at", ["sent_at"])
    op.execute("UPDATE github_writes SET slot_at = created_at")
    with op.batch_alter_table("command_invocations") as batch:
        batch.add_column(
            sa.Column("answered", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch.add_column(sa.Column("withheld", sa.Text(), nullable=True))
    with op.batch_alter_table("suppressions") as batch:
        batch.add_column(
            sa.Column("violation_keys", sa.JSON(), nullable=False, server_default="[]")
        )
    op.create_table(
        "queued_checks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repository", sa.String(length=200), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("repository", "number", name="uq_queued_checks_pr"),
    )
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("coalesce_key", sa.String(length=200), nullable=True))
        batch.create_index("ix_deliveries_coalesce_key", ["coalesce_key"])
    with op.batch_alter_table("pr_notices") as batch:
        batch.add_column(sa.Column("failed_head", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("rerun_held", sa.Text(), nullable=True))
    # A suppression holds the violations of the fix it was recorded for.
    op.execute(
        "UPDATE suppressions SET violation_keys = "
        "(SELECT fixes.violation_keys FROM fixes WHERE fixes.id = suppressions.fix_id) "
        "WHERE fix_id IS NOT NULL"
    )


def downgrade() -> None:
    """Revert this revision."""
    op.drop_table("queued_checks")
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_index("ix_deliveries_coalesce_key")
        batch.drop_column("coalesce_key")
    with op.batch_alter_table("pr_notices") as batch:
        batch.drop_column("rerun_held")
        batch.drop_column("failed_head")
    with op.batch_alter_table("suppressions") as batch:
        batch.drop_column("violation_keys")
    with op.batch_alter_table("command_invocations") as batch:
        batch.drop_column("withheld")
        batch.drop_column("answered")
    with op.batch_alter_table("github_writes") as batch:
        batch.drop_index("ix_github_writes_sent_at")
        batch.drop_index("ix_github_writes_slot_at")
        batch.drop_column("error")
        batch.drop_column("sent_at")
        batch.drop_column("request")
        batch.drop_column("slot_at")
