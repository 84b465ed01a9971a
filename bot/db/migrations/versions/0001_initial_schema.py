"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29 15:57:42.284771
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Apply this revision: one function per table, in dependency order."""
    _deliveries()
    _fixes()
    _github_writes()
    _command_invocations()
    _fix_comments()
    _reports()
    _verifications()
    _repair_runs()
    _transitions()


def _deliveries() -> None:
    op.create_table(
        "deliveries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("event", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=True),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("outcome", sa.String(length=32), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("dispatched_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key"),
    )


def _fixes() -> None:
    op.create_table(
        "fixes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("forge", sa.String(length=16), nullable=False),
        sa.Column("repository", sa.Text(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=True),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("dedupe_key", sa.String(length=64), nullable=False),
        sa.Column("signature", sa.String(length=64), nullable=False),
        sa.Column("base_ref", sa.String(length=200), nullable=True),
        sa.Column("base_sha", sa.String(length=64), nullable=False),
        sa.Column("branch", sa.String(length=200), nullable=False),
        sa.Column("head_sha", sa.String(length=64), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("files", sa.JSON(), nullable=False),
        sa.Column("violations", sa.JSON(), nullable=False),
        sa.Column("violation_keys", sa.JSON(), nullable=False),
        sa.Column("contract_key", sa.String(length=64), nullable=False),
        sa.Column("diff", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("state_reason", sa.Text(), nullable=False),
        sa.Column("pr_number", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("fixes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_fixes_contract_key"), ["contract_key"], unique=False)
        batch_op.create_index(batch_op.f("ix_fixes_repository"), ["repository"], unique=False)
        batch_op.create_index(batch_op.f("ix_fixes_signature"), ["signature"], unique=False)
        batch_op.create_index("ix_fixes_state_created", ["state", "created_at"], unique=False)
        batch_op.create_index(
            "uq_fixes_open_dedupe_key",
            ["dedupe_key"],
            unique=True,
            sqlite_where=sa.text("state = 'open'"),
            postgresql_where=sa.text("state = 'open'"),
        )


def _github_writes() -> None:
    op.create_table(
        "github_writes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("repository", sa.String(length=200), nullable=False),
        sa.Column("target", sa.String(length=200), nullable=False),
        sa.Column("remote_id", sa.String(length=64), nullable=True),
        sa.Column("remote_url", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("done_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key"),
    )
    with op.batch_alter_table("github_writes", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_github_writes_created_at"), ["created_at"], unique=False
        )


def _command_invocations() -> None:
    op.create_table(
        "command_invocations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("delivery_id", sa.Integer(), nullable=True),
        sa.Column("repository", sa.Text(), nullable=False),
        sa.Column("pr_number", sa.Integer(), nullable=False),
        sa.Column("fix_id", sa.Integer(), nullable=True),
        sa.Column("author", sa.String(length=200), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("command", sa.String(length=32), nullable=True),
        sa.Column("arguments", sa.JSON(), nullable=False),
        sa.Column("outcome", sa.String(length=32), nullable=False),
        sa.Column("reply", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["delivery_id"],
            ["deliveries.id"],
        ),
        sa.ForeignKeyConstraint(
            ["fix_id"],
            ["fixes.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("command_invocations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_command_invocations_fix_id"), ["fix_id"], unique=False)


def _fix_comments() -> None:
    op.create_table(
        "fix_comments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("fix_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("author", sa.String(length=200), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("context", sa.String(length=200), nullable=True),
        sa.Column("state", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["fix_id"],
            ["fixes.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("fix_comments", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_fix_comments_fix_id"), ["fix_id"], unique=False)


def _reports() -> None:
    op.create_table(
        "reports",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("delivery_id", sa.Integer(), nullable=False),
        sa.Column("idempotency_key", sa.String(length=200), nullable=True),
        sa.Column("pipeline", sa.String(length=200), nullable=True),
        sa.Column("build_number", sa.Integer(), nullable=True),
        sa.Column("build_url", sa.Text(), nullable=True),
        sa.Column("repository", sa.Text(), nullable=True),
        sa.Column("pr_number", sa.Integer(), nullable=True),
        sa.Column("head_sha", sa.String(length=64), nullable=True),
        sa.Column("base_ref", sa.String(length=200), nullable=True),
        sa.Column("base_sha", sa.String(length=64), nullable=True),
        sa.Column("stage", sa.String(length=200), nullable=True),
        sa.Column("format", sa.String(length=16), nullable=False),
        sa.Column("failure_count", sa.Integer(), nullable=False),
        sa.Column("findings", sa.JSON(), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("triage_sent_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("classified_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["delivery_id"],
            ["deliveries.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("idempotency_key"),
        sa.UniqueConstraint("pipeline", "build_number", name="uq_reports_pipeline_build"),
    )


def _verifications() -> None:
    op.create_table(
        "verifications",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("fix_id", sa.Integer(), nullable=False),
        sa.Column("requested_by", sa.String(length=200), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("requested_queue", sa.String(length=100), nullable=False),
        sa.Column("queue", sa.String(length=100), nullable=True),
        sa.Column("host", sa.String(length=200), nullable=True),
        sa.Column("device", sa.String(length=200), nullable=True),
        sa.Column("on_requested_device", sa.Boolean(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("verdict", sa.String(length=32), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("tests", sa.JSON(), nullable=False),
        sa.Column("results", sa.JSON(), nullable=False),
        sa.Column("log", sa.Text(), nullable=False),
        sa.Column("task_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["fix_id"],
            ["fixes.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("verifications", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_verifications_fix_id"), ["fix_id"], unique=False)


def _repair_runs() -> None:
    op.create_table(
        "repair_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("report_id", sa.Integer(), nullable=False),
        sa.Column("root_cause", sa.String(length=300), nullable=False),
        sa.Column("signature", sa.String(length=64), nullable=False),
        sa.Column("contract", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("fix_id", sa.Integer(), nullable=True),
        sa.Column("linked_url", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["fix_id"],
            ["fixes.id"],
        ),
        sa.ForeignKeyConstraint(
            ["report_id"],
            ["reports.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("report_id", "root_cause", name="uq_runs_report_root_cause"),
    )
    with op.batch_alter_table("repair_runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_repair_runs_fix_id"), ["fix_id"], unique=False)
        batch_op.create_index("ix_runs_state_updated", ["state", "updated_at"], unique=False)


def _transitions() -> None:
    op.create_table(
        "transitions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("from_state", sa.String(length=32), nullable=True),
        sa.Column("to_state", sa.String(length=32), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["repair_runs.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("transitions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_transitions_run_id"), ["run_id"], unique=False)


def downgrade() -> None:
    """Revert this revision."""

    with op.batch_alter_table("transitions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_transitions_run_id"))

    op.drop_table("transitions")
    with op.batch_alter_table("repair_runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_state_updated")
        batch_op.drop_index(batch_op.f("ix_repair_runs_fix_id"))

    op.drop_table("repair_runs")
    with op.batch_alter_table("verifications", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_verifications_fix_id"))

    op.drop_table("verifications")
    op.drop_table("reports")
    with op.batch_alter_table("fix_comments", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_fix_comments_fix_id"))

    op.drop_table("fix_comments")
    with op.batch_alter_table("command_invocations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_command_invocations_fix_id"))

    op.drop_table("command_invocations")
    with op.batch_alter_table("github_writes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_github_writes_created_at"))

    op.drop_table("github_writes")
    with op.batch_alter_table("fixes", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_fixes_open_dedupe_key",
            sqlite_where=sa.text("state = 'open'"),
            postgresql_where=sa.text("state = 'open'"),
        )
        batch_op.drop_index("ix_fixes_state_created")
        batch_op.drop_index(batch_op.f("ix_fixes_signature"))
        batch_op.drop_index(batch_op.f("ix_fixes_repository"))
        batch_op.drop_index(batch_op.f("ix_fixes_contract_key"))

    op.drop_table("fixes")
    op.drop_table("deliveries")
