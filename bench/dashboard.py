"""Server time of the dashboard's ``/`` with 10,000 fix PRs in the database.

Run: .venv/bin/python bench/dashboard.py [--fixes 10000] [--requests 30] [--database-url URL]

Seeds a fresh database (SQLite in a temporary folder by default; ``--database-url`` for an empty
PostgreSQL database) with bulk inserts: one failure report, repair run, four transitions and fix
PR per fix, and a finished verification for most of them (on two devices), with every
outcome: merged unchanged, merged after human edits (with a diff), closed, superseded, reverted
(a suppression row), across two signatures and codemods. Then starts a real ``repairbot serve``
and requests ``/`` (first page, a deep page, a filtered page, a search) and ``/quality``, and
prints the quality figures of the seeded database. "Server time" is the
``Server-Timing`` the dashboard reports (queries + rendering); wall time over loopback HTTP is
shown too. The baseline, measured in the same run against the same server, is ``/healthz``.
Target (issue #8): ``/`` at most 300 ms; ``/quality`` (issue 15) is held to the same.
"""

from __future__ import annotations

import random
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import insert

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import bench_parser, serve_command, service_env, serving
from bench.service import free_port, percentile
from bot.dashboard.quality import quality
from bot.db.migrate import upgrade
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
from bot.db.session import engine_for, session_scope

TARGET_MS = 300.0
TARGET_PATHS = ("/", "/quality")  # the list with its header figures, and the quality page
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


def print_figures(url: str) -> None:
    """The quality figures of the seeded database, as ``/quality`` shows them."""
    with session_scope(url) as session:
        q = quality(session)
    t = q.total
    rate = f"{100 * t.landed_rate:.1f}%" if t.landed_rate is not None else "-"
    median = f"{t.median_to_verified:.0f}s" if t.median_to_verified is not None else "-"
    print(
        f"figures: landed unchanged {rate} ({t.landed_unchanged}/{t.decided} decided, "
        f"{t.opened} opened; {t.merged_unchanged} merged unchanged, {t.merged_edited} after "
        f"edits, {t.closed} closed, {t.superseded} superseded, {t.reverted} reverted); "
        f"median failure -> verified fix {median}"
    )
    for o in q.by_signature + q.by_codemod:
        print(f"  {o.key:<28} opened {o.opened:5d}  landed {o.landed_unchanged:5d}/{o.decided}")
    for d in q.devices:
        print(f"  device-minutes on {d.device}: {d.minutes:.1f} ({d.verifications} verifications)")


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


def measure(client: httpx.Client, path: str, requests: int) -> tuple[list[float], list[float]]:
    """Wall and server milliseconds of ``requests`` GETs of ``path`` after two warm-up calls."""
    for _ in range(2):
        client.get(path).raise_for_status()
    wall, server = [], []
    for _ in range(requests):
        began = time.perf_counter()
        response = client.get(path)
        wall.append((time.perf_counter() - began) * 1000)
        response.raise_for_status()
        timing = re.search(r"dur=([\d.]+)", response.headers.get("server-timing", ""))
        server.append(float(timing.group(1)) if timing else wall[-1])
    return wall, server


def page_paths(fixes: int) -> tuple[str, ...]:
    """The pages measured: first, a deep page, a filtered page, a search and the fixes partial."""
    return (
        "/",
        f"/?page={fixes // 100}",
        "/?verdict=fixed&state=open",
        "/?q=Worker777",
        "/partials/fixes",
        "/quality",
    )


def page_line(path: str, wall: list[float], server_ms: list[float], baseline: float) -> str:
    """A page's server p50/p95 and wall p50 in ms, and that wall p50 over ``baseline``."""
    p50, p95 = statistics.median(server_ms), percentile(server_ms, 0.95)
    return (
        f"{path:<28} server p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  "
        f"wall p50 {statistics.median(wall):6.1f} ms  "
        f"= {statistics.median(wall) / baseline:5.1f}x /healthz"
    )


def measure_pages(url: str, fixes: int, requests: int) -> float:
    """Print the baseline and each page's times; returns the worst server p50 of
    ``TARGET_PATHS`` in ms."""
    with httpx.Client(base_url=url, timeout=60) as client:
        base_wall, _ = measure(client, "/healthz", requests)
        baseline = statistics.median(base_wall)
        print(f"baseline /healthz: p50 {baseline:.1f} ms wall")
        worst = 0.0
        for path in page_paths(fixes):
            wall, server_ms = measure(client, path, requests)
            if path in TARGET_PATHS:
                worst = max(worst, statistics.median(server_ms))
            print(page_line(path, wall, server_ms, baseline))
    return worst


def main() -> None:
    """Seed the database, serve it, measure the pages and print the verdict on the target."""
    parser = bench_parser(__doc__)
    parser.add_argument("--fixes", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--database-url", default=None, help="an empty database (default SQLite)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="repairbot-bench-dash-") as tmp:
        root = Path(tmp)
        url = args.database_url or f"sqlite:///{root / 'data' / 'repairbot.db'}"
        upgrade(url)
        seconds = seed(url, args.fixes)
        print(f"seeded {args.fixes} fix PRs (+ reports, runs, verifications) in {seconds:.1f}s")
        print_figures(url)
        port = free_port()
        env = service_env(
            root / "data", root, REPAIRBOT_DATABASE_URL=url, REPAIRBOT_EMBEDDED_WORKER="false"
        )
        command = serve_command(port, "--no-worker")
        with serving(command, port, env, root / "serve.log") as server_url:
            worst = measure_pages(server_url, args.fixes, args.requests)
    verdict = "PASS" if worst <= TARGET_MS else "FAIL"
    print(
        f"target: server time of / and /quality <= {TARGET_MS:.0f} ms with {args.fixes} fix PRs: "
        f"{worst:.1f} ms {verdict}"
    )


if __name__ == "__main__":
    main()
