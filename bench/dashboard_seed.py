"""The dashboard bench's seeder: ``fixes`` fix PRs with their reports, runs, transitions,
verifications and reverts, bulk-inserted as a history of every outcome would hold them (used by
``bench/dashboard.py`` and by the dashboard's browser test at 100,000 fix PRs)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert

from bot.db.models import (
    Base,
    CiFailure,
    Delivery,
    Fix,
    RepairRun,
    Suppression,
    Transition,
    Verification,
)
from bot.db.session import engine_for

STATES = ("open",) * 6 + ("merged",) * 2 + ("closed", "superseded")
VERDICTS = ("fixed",) * 7 + ("still_failing", "not_reproduced", "new_failures")
BATCH = 2000
DEVICES = ("cpu", "NVIDIA H100 PCIe", "NVIDIA H100 PCIe")
EDIT = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n line\n+# reviewed\n"

Row = dict[str, Any]


def _batches(rows: list[Row]) -> list[list[Row]]:
    return [rows[i : i + BATCH] for i in range(0, len(rows), BATCH)]


@dataclass
class SeedRows:
    """The rows to bulk-insert, one list per table."""

    deliveries: list[Row] = field(default_factory=list)
    reports: list[Row] = field(default_factory=list)
    fixes: list[Row] = field(default_factory=list)
    runs: list[Row] = field(default_factory=list)
    transitions: list[Row] = field(default_factory=list)
    verifications: list[Row] = field(default_factory=list)
    suppressions: list[Row] = field(default_factory=list)

    def by_model(self) -> list[tuple[type[Base], list[Row]]]:
        """Each table's model and rows, parents before the rows that refer to them."""
        return [
            (Delivery, self.deliveries),
            (CiFailure, self.reports),
            (Fix, self.fixes),
            (RepairRun, self.runs),
            (Transition, self.transitions),
            (Verification, self.verifications),
            (Suppression, self.suppressions),
        ]


def report_row(n: int, received: datetime) -> Row:
    """The classified failure report of fix ``n``."""
    return {
        "id": n,
        "delivery_id": n,
        "pipeline": "L0_MergeRequest_PR",
        "build_number": n,
        "repository": f"/repos/target-{n % 7}",
        "stage": "H100_PCIe-PyTorch-1",
        "format": "console",
        "failure_count": 3,
        "findings": [
            {
                "signature": "contract-forward-override",
                "class_name": f"Worker{n}",
                "message": f"TypeError: Worker{n} must not override SpecWorkerBase.forward",
            }
        ],
        "received_at": received,
        "triage_sent_at": received,
        "classified_at": received + timedelta(seconds=1),
    }


def signature_of(n: int) -> str:
    """Every fourth fix answers the abstract-class signature (two codemods), the rest renames."""
    return "abstract-missing-hook" if n % 4 == 0 else "contract-forward-override"


def outcome_columns(n: int, state: str) -> Row:
    """How fix ``n`` landed: every third merged one after a human's edit, the others unchanged."""
    edited = state == "merged" and n % 3 == 0
    return {
        "codemods": ["add_hook_stub", "rename_forbidden"] if n % 4 == 0 else ["rename_forbidden"],
        "bot_head_sha": "b" * 40,
        "merged_head_sha": ("c" if edited else "b") * 40 if state == "merged" else None,
        "merged_with_edits": edited if state == "merged" else None,
        "human_edit_diff": EDIT if edited else None,
    }


def fix_row(n: int, state: str, created: datetime) -> Row:
    """Fix PR ``n`` in ``state``, opened at ``created``."""
    return outcome_columns(n, state) | {
        "id": n,
        "forge": "local",
        "repository": f"/repos/target-{n % 7}",
        "number": n,
        "url": f"http://127.0.0.1/fixes/{n}",
        "dedupe_key": f"key-{n}",
        "signature": signature_of(n),
        "base_ref": "main",
        "base_sha": "a" * 40,
        "branch": f"repairbot/contract-forward-override/{n:05d}",
        "head_sha": "b" * 40,
        "title": f"[None][fix] Rename Worker{n}.forward to _forward_impl",
        "body": "## Description\n" + "text " * 200,
        "files": [f"workers/w{n}.py"],
        "violations": [f"workers/w{n}.py:10 `Worker{n}` (forward-override)"],
        "diff": "diff --git a/x b/x\n" + "+line\n" * 200,
        "state": state,
        "state_reason": "",
        "created_at": created,
        "updated_at": created,
        "closed_at": created + timedelta(hours=2) if state != "open" else None,
    }


def run_row(n: int, received: datetime, created: datetime) -> Row:
    """The repair run of report ``n`` that opened fix PR ``n``."""
    return {
        "id": n,
        "report_id": n,
        "root_cause": f"contract-forward-override:Worker{n}",
        "signature": "contract-forward-override",
        "contract": {},
        "state": "pr_opened",
        "reason": "",
        "attempts": 1,
        "fix_id": n,
        "created_at": received,
        "updated_at": created,
    }


def transition_rows(n: int, received: datetime) -> list[Row]:
    """The four state transitions of run ``n``, a second apart."""
    return [
        {
            "run_id": n,
            "from_state": None,
            "to_state": to,
            "reason": "",
            "at": received + timedelta(seconds=step),
        }
        for step, to in enumerate(("classified", "swept", "patched", "pr_opened"))
    ]


def verification_row(n: int, created: datetime, finished: datetime) -> Row:
    """The finished automatic verification of fix PR ``n``."""
    return {
        "fix_id": n,
        "requested_by": "repairbot (automatic)",
        "options": {},
        "requested_queue": "gpu.H100_PCIe",
        "queue": "cpu" if n % 3 == 0 else "gpu.H100_PCIe",
        "device": DEVICES[n % len(DEVICES)],
        "on_requested_device": False,
        "state": "done",
        "verdict": VERDICTS[n % len(VERDICTS)],
        "reason": "",
        "tests": ["tests/test_w.py::test_forward"],
        "results": {"tests": [{"nodeid": "t", "before": "failed", "after": "passed"}]},
        "log": "2 passed",
        "created_at": created,
        "started_at": created + timedelta(seconds=2),
        "finished_at": finished,
    }


def seed_rows(fixes: int, now: datetime, rng: random.Random) -> SeedRows:
    """The rows of ``fixes`` fix PRs, the newest received shortly before ``now``."""
    rows = SeedRows()
    for n in range(1, fixes + 1):
        received = now - timedelta(minutes=2 * (fixes - n) + rng.randint(0, 1))
        created = received + timedelta(seconds=rng.uniform(20, 400))
        state = STATES[n % len(STATES)]
        rows.deliveries.append(
            {"id": n, "source": "ci", "key": f"ci:{n}", "event": "ci_failure", "body": b"log"}
        )
        rows.reports.append(report_row(n, received))
        rows.fixes.append(fix_row(n, state, created))
        rows.runs.append(run_row(n, received, created))
        rows.transitions.extend(transition_rows(n, received))
        if n % 5:
            finished = created + timedelta(seconds=rng.uniform(30, 300))
            rows.verifications.append(verification_row(n, created, finished))
        if state == "merged" and n % 11 == 0:
            rows.suppressions.append(revert_row(n, created))
    return rows


def revert_row(n: int, created: datetime) -> Row:
    """Merged fix ``n`` was reverted on the base: the suppression the revert records."""
    return {
        "repository": f"/repos/target-{n % 7}",
        "dedupe_key": f"key-{n}",
        "reason": "reverted",
        "fix_id": n,
        "decided_by": "a revert on the base branch",
        "detail": f"fix #{n} merged; its violations are back",
        "created_at": created + timedelta(days=1),
        "held_runs": 1,
    }


def insert_rows(url: str, rows: SeedRows, fixes: int) -> None:
    """Bulk-insert ``rows`` in batches; on PostgreSQL, move the id sequences on and ANALYZE."""
    engine = engine_for(url)
    with engine.begin() as connection:
        for model, table_rows in rows.by_model():
            for batch in _batches(table_rows):
                connection.execute(insert(model), batch)
        if not url.startswith("sqlite"):
            for table in ("deliveries", "reports", "fixes", "repair_runs"):
                connection.exec_driver_sql(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), {fixes})"
                )
    if not url.startswith("sqlite"):
        with engine.begin() as connection:  # what autovacuum would do after a bulk load
            connection.exec_driver_sql("ANALYZE")
    engine.dispose()


def seed(url: str, fixes: int) -> float:
    """Insert ``fixes`` fix PRs with their reports, runs and verifications; returns seconds."""
    began = time.perf_counter()
    rows = seed_rows(fixes, datetime.now(UTC), random.Random(8))
    insert_rows(url, rows, fixes)
    return time.perf_counter() - began
