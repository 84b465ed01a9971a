"""dashboard running totals, their triggers, list indexes and a search index

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04 09:00:00.000000

Every page of the dashboard reads running totals (``bot.db.records.tallies``) instead of
counting all history. Triggers mark each changed fix PR and report in ``tally_dirty`` in the
same transaction as the change, whatever code made it; ``bot.db.tally_fold`` counts them.

SQLite drops a table's triggers when a later migration rebuilds the table (``batch_alter_table``
on fixes, verifications, repair_runs, reports or suppressions): such a migration must create
them again (``create_triggers``); ``tests/bot/db/test_tallies.py`` checks they exist at head.

The search index: SQLite FTS5 with the trigram tokenizer (substring search, as before), kept by
triggers; on PostgreSQL a pg_trgm GIN index on the searched text. Either is skipped, and search
scans as before, where the database lacks it (SQLite before 3.34, no pg_trgm extension).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# (table, trigger columns for UPDATE OF, marks: (kind, the row's column naming the owner))
# The columns are what the totals count and what the fix list shows (every change to them also
# moves the list's data version, which the live refresh compares).
FIX_COLUMNS = (
    "repository, signature, state, number, merged_with_edits, codemods, title, url, branch, "
    "files, violations, state_reason, closed_at"
)
VERIFICATION_COLUMNS = (
    "fix_id, verdict, device, started_at, finished_at, state, queue, on_requested_device"
)
WATCHED = (
    ("fixes", FIX_COLUMNS, (("f", "id"),)),
    ("verifications", VERIFICATION_COLUMNS, (("f", "fix_id"),)),
    ("repair_runs", "report_id, state, fix_id", (("r", "report_id"), ("f", "fix_id"))),
    ("reports", "received_at, classified_at", (("r", "id"),)),
    ("suppressions", "reason, fix_id", (("f", "fix_id"),)),
)
SEARCHED = ("title", "repository", "branch", "violations")
SEPARATOR = "chr(31)"  # a character no one searches for: a match cannot span two columns


def _sqlite_marks(row: str, marks: tuple[tuple[str, str], ...]) -> str:
    return " ".join(
        f"INSERT INTO tally_dirty (kind, owner_id) "
        f"SELECT '{kind}', {row}.{column} WHERE {row}.{column} IS NOT NULL "
        "ON CONFLICT (kind, owner_id) DO UPDATE SET marks = marks + 1;"
        for kind, column in marks
    )


def _sqlite_triggers() -> list[str]:
    statements = []
    for table, columns, marks in WATCHED:
        for event, rows in (
            ("INSERT", ("NEW",)),
            (f"UPDATE OF {columns}", ("NEW", "OLD")),
            ("DELETE", ("OLD",)),
        ):
            name = f"tally_{table}_{event.split()[0].lower()}"
            body = " ".join(_sqlite_marks(row, marks) for row in rows)
            statements.append(f"CREATE TRIGGER {name} AFTER {event} ON {table} BEGIN {body} END")
    return statements


def _postgresql_triggers() -> list[str]:
    statements = [
        "CREATE OR REPLACE FUNCTION tally_mark(mark_kind text, owner integer) RETURNS void AS $$ "
        "BEGIN IF owner IS NOT NULL THEN "
        "INSERT INTO tally_dirty (kind, owner_id) VALUES (mark_kind, owner) "
        # DO UPDATE, not DO NOTHING: it waits for a fold holding the row, so a change made
        # while a fold counts its owner is marked again once that fold commits.
        "ON CONFLICT (kind, owner_id) DO UPDATE SET marks = tally_dirty.marks + 1; "
        "END IF; END $$ LANGUAGE plpgsql"
    ]
    for table, columns, marks in WATCHED:
        new = " ".join(f"PERFORM tally_mark('{k}', NEW.{c});" for k, c in marks)
        old = " ".join(f"PERFORM tally_mark('{k}', OLD.{c});" for k, c in marks)
        statements += [
            f"CREATE OR REPLACE FUNCTION tally_mark_{table}() RETURNS trigger AS $$ BEGIN "
            f"IF TG_OP <> 'DELETE' THEN {new} END IF; "
            f"IF TG_OP <> 'INSERT' THEN {old} END IF; "
            "RETURN NULL; END $$ LANGUAGE plpgsql",
            f"CREATE TRIGGER tally_{table} AFTER INSERT OR UPDATE OF {columns} OR DELETE "
            f"ON {table} FOR EACH ROW EXECUTE FUNCTION tally_mark_{table}()",
        ]
    return statements


def create_triggers() -> None:
    """The triggers that mark changed rows, in this database's dialect."""
    postgresql = op.get_bind().dialect.name == "postgresql"
    for statement in _postgresql_triggers() if postgresql else _sqlite_triggers():
        op.execute(statement)


def _sqlite_search() -> None:
    bind = op.get_bind()
    try:
        with bind.begin_nested():
            bind.exec_driver_sql(
                "CREATE VIRTUAL TABLE fixes_search USING fts5("
                f"{', '.join(SEARCHED)}, content='fixes', content_rowid='id', "
                "tokenize='trigram')"
            )
    except sa.exc.OperationalError:
        return  # no trigram tokenizer in this SQLite: search scans
    columns = ", ".join(SEARCHED)
    new = ", ".join(f"NEW.{c}" for c in SEARCHED)
    old = ", ".join(f"OLD.{c}" for c in SEARCHED)
    remove = (
        f"INSERT INTO fixes_search (fixes_search, rowid, {columns}) "
        f"VALUES ('delete', OLD.id, {old});"
    )
    add = f"INSERT INTO fixes_search (rowid, {columns}) VALUES (NEW.id, {new});"
    op.execute(f"CREATE TRIGGER fixes_search_insert AFTER INSERT ON fixes BEGIN {add} END")
    op.execute(f"CREATE TRIGGER fixes_search_delete AFTER DELETE ON fixes BEGIN {remove} END")
    op.execute(
        f"CREATE TRIGGER fixes_search_update AFTER UPDATE OF {columns} ON fixes "
        f"BEGIN {remove} {add} END"
    )
    op.execute("INSERT INTO fixes_search (fixes_search) VALUES ('rebuild')")


def _postgresql_search() -> None:
    bind = op.get_bind()
    try:
        with bind.begin_nested():
            bind.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except sa.exc.DBAPIError:
        return  # the extension is not installed or not ours to create: search scans
    text = f" || {SEPARATOR} || ".join(f"{c}::text" if c == "violations" else c for c in SEARCHED)
    op.execute(f"CREATE INDEX ix_fixes_search ON fixes USING gin (({text}) gin_trgm_ops)")


def upgrade() -> None:
    """Apply this revision: the totals' tables and triggers, every existing fix PR and report
    marked to be counted (the reconciler folds them in batches), the list's indexes, search."""
    op.create_table(
        "tallies",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("measure", sa.String(length=255), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("name", "key", "measure"),
    )
    op.create_table(
        "tally_parts",
        sa.Column("kind", sa.String(length=1), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("measure", sa.String(length=255), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("kind", "owner_id", "name", "key", "measure"),
    )
    op.create_table(
        "tally_dirty",
        sa.Column("kind", sa.String(length=1), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("marks", sa.BigInteger(), server_default="1", nullable=False),
        sa.PrimaryKeyConstraint("kind", "owner_id"),
    )
    create_triggers()
    op.execute("INSERT INTO tally_dirty (kind, owner_id) SELECT 'f', id FROM fixes")
    op.execute("INSERT INTO tally_dirty (kind, owner_id) SELECT 'r', id FROM reports")
    # Plain index statements, not batch_alter_table: on SQLite a batch may rebuild the table,
    # which would drop the triggers just made.
    op.drop_index("ix_fixes_repository", table_name="fixes")
    op.drop_index("ix_fixes_signature", table_name="fixes")
    op.create_index("ix_fixes_repository_id", "fixes", ["repository", "id"])
    op.create_index("ix_fixes_signature_id", "fixes", ["signature", "id"])
    op.create_index("ix_fixes_state_id", "fixes", ["state", "id"])
    if op.get_bind().dialect.name == "postgresql":
        _postgresql_search()
    else:
        _sqlite_search()


def downgrade() -> None:
    """Revert this revision."""
    postgresql = op.get_bind().dialect.name == "postgresql"
    if postgresql:
        op.execute("DROP INDEX IF EXISTS ix_fixes_search")
        for table, _, _ in WATCHED:
            op.execute(f"DROP TRIGGER IF EXISTS tally_{table} ON {table}")
            op.execute(f"DROP FUNCTION IF EXISTS tally_mark_{table}()")
        op.execute("DROP FUNCTION IF EXISTS tally_mark(text, integer)")
    else:
        for event in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER IF EXISTS fixes_search_{event}")
            for table, _, _ in WATCHED:
                op.execute(f"DROP TRIGGER IF EXISTS tally_{table}_{event}")
        op.execute("DROP TABLE IF EXISTS fixes_search")
    for name in ("ix_fixes_state_id", "ix_fixes_signature_id", "ix_fixes_repository_id"):
        op.drop_index(name, table_name="fixes")
    op.create_index("ix_fixes_signature", "fixes", ["signature"])
    op.create_index("ix_fixes_repository", "fixes", ["repository"])
    op.drop_table("tally_dirty")
    op.drop_table("tally_parts")
    op.drop_table("tallies")
