"""Server time of the dashboard's ``/`` with 10,000 fix PRs in the database.

Run: .venv/bin/python bench/dashboard.py [--fixes 10000] [--requests 30] [--database-url URL]

Seeds a fresh database (SQLite in a temporary folder by default; ``--database-url`` for an empty
PostgreSQL database) with bulk inserts: one failure report, repair run, four transitions and fix
PR per fix, and a finished verification for most of them. Then starts a real ``repairbot serve``
and requests ``/`` (first page, a deep page, a filtered page, a search). "Server time" is the
``Server-Timing`` the dashboard reports (queries + rendering); wall time over loopback HTTP is
shown too. The baseline, measured in the same run against the same server, is ``/healthz``.
Target (issue #8): ``/`` at most 300 ms.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import insert

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.service import BIN, free_port, percentile, start, stop
from bot.db.migrate import upgrade
from bot.db.models import Delivery, Fix, RepairRun, Report, Transition, Verification
from bot.db.session import engine_for

TARGET_MS = 300.0
STATES = ("open",) * 6 + ("merged",) * 2 + ("closed", "superseded")
VERDICTS = ("fixed",) * 7 + ("still_failing", "not_reproduced", "new_failures")
BATCH = 2000


def _batches(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [rows[i : i + BATCH] for i in range(0, len(rows), BATCH)]


def seed(url: str, fixes: int) -> float:
    """Insert ``fixes`` fix PRs with their reports, runs and verifications; returns seconds."""
    began = time.perf_counter()
    rng = random.Random(8)
    now = datetime.now(UTC)
    deliveries, reports, runs, transitions, fix_rows, verifications = [], [], [], [], [], []
    for n in range(1, fixes + 1):
        received = now - timedelta(minutes=2 * (fixes - n) + rng.randint(0, 1))
        created = received + timedelta(seconds=rng.uniform(20, 400))
        state = STATES[n % len(STATES)]
        deliveries.append(
            {"id": n, "source": "ci", "key": f"ci:{n}", "event": "ci_failure", "body": b"log"}
        )
        reports.append(
            {
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
        )
        fix_rows.append(
            {
                "id": n,
                "forge": "local",
                "repository": f"/repos/target-{n % 7}",
                "number": n,
                "url": f"http://127.0.0.1/fixes/{n}",
                "dedupe_key": f"key-{n}",
                "signature": "contract-forward-override",
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
        )
        runs.append(
            {
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
        )
        for step, to in enumerate(("classified", "swept", "patched", "pr_opened")):
            transitions.append(
                {
                    "run_id": n,
                    "from_state": None,
                    "to_state": to,
                    "reason": "",
                    "at": received + timedelta(seconds=step),
                }
            )
        if n % 5:
            verifications.append(
                {
                    "fix_id": n,
                    "requested_by": "repairbot (automatic)",
                    "options": {},
                    "requested_queue": "gpu.H100_PCIe",
                    "queue": "cpu",
                    "device": "cpu",
                    "on_requested_device": False,
                    "state": "done",
                    "verdict": VERDICTS[n % len(VERDICTS)],
                    "reason": "",
                    "tests": ["tests/test_w.py::test_forward"],
                    "results": {"tests": [{"nodeid": "t", "before": "failed", "after": "passed"}]},
                    "log": "2 passed",
                    "created_at": created,
                    "started_at": created + timedelta(seconds=2),
                    "finished_at": created + timedelta(seconds=rng.uniform(30, 300)),
                }
            )
    engine = engine_for(url)
    with engine.begin() as connection:
        for model, rows in (
            (Delivery, deliveries),
            (Report, reports),
            (Fix, fix_rows),
            (RepairRun, runs),
            (Transition, transitions),
            (Verification, verifications),
        ):
            for batch in _batches(rows):
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
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
        port = free_port()
        env = {
            "REPAIRBOT_ENVIRONMENT": "test",
            "REPAIRBOT_DATA_DIR": str(root / "data"),
            # Required outside development: the targets are built in this run's folder.
            "REPAIRBOT_REPOSITORY_ROOTS": f'["{root!s}"]',
            "REPAIRBOT_DATABASE_URL": url,
            "REPAIRBOT_EMBEDDED_WORKER": "false",
            "REPAIRBOT_GITHUB_WEBHOOK_SECRET": "bench-webhook-secret-0123456789",
            "REPAIRBOT_CI_TOKEN": "bench-ci-token-0123456789",
        }
        server = start(
            [str(BIN / "repairbot"), "serve", "--port", str(port), "--no-worker"],
            env,
            root / "serve.log",
            f"http://127.0.0.1:{port}/readyz",
        )
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                base_wall, _ = measure(client, "/healthz", args.requests)
                baseline = statistics.median(base_wall)
                print(f"baseline /healthz: p50 {baseline:.1f} ms wall")
                worst = 0.0
                for path in (
                    "/",
                    f"/?page={args.fixes // 100}",
                    "/?verdict=fixed&state=open",
                    "/?q=Worker777",
                    "/partials/fixes",
                ):
                    wall, server_ms = measure(client, path, args.requests)
                    p50, p95 = statistics.median(server_ms), percentile(server_ms, 0.95)
                    worst = max(worst, p50) if path == "/" else worst
                    print(
                        f"{path:<28} server p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  "
                        f"wall p50 {statistics.median(wall):6.1f} ms  "
                        f"= {statistics.median(wall) / baseline:5.1f}x /healthz"
                    )
        finally:
            stop(server)
    verdict = "PASS" if worst <= TARGET_MS else "FAIL"
    print(
        f"target: server time of / <= {TARGET_MS:.0f} ms with {args.fixes} fix PRs: "
        f"{worst:.1f} ms {verdict}"
    )


if __name__ == "__main__":
    main()
