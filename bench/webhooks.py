"""Intake under load: repairbot's webhook and CI-report endpoints against bare ones, driven by wrk.

Run: .venv/bin/python bench/webhooks.py [--seconds 15] [--connections 32] [--rounds 1]
Needs wrk (`apt-get install wrk`); PostgreSQL on 127.0.0.1:5432 for the PostgreSQL server.

Four servers run in turn under uvicorn on loopback, each in its own process:
- bare: bench/bare_webhook_app.py, FastAPI that only authenticates (HMAC / bearer token);
- bare + zstd, for the 1 MB load only: the same, and it compresses each report as repairbot
  stores it, keeping nothing. This disk cannot take the reports raw at these rates, so any
  durable store pays at least this; repairbot's ratio to it is printed too;
- `repairbot serve` on SQLite, the embedded default (in-process worker, filesystem broker);
- `repairbot serve` on a fresh PostgreSQL database, otherwise the same.
For the CI reports repairbot runs `--no-worker` (the API alone): each report queues the triage
of a 1 MB log, which an in-process worker would run on the CPU the intake is measured on.
Two loads: a signed 8 KB GitHub ``issues`` delivery with a new ``X-GitHub-Delivery`` per
request, and a 1 MB console log posted to ``/api/v1/ci-failures`` with a new
``Idempotency-Key`` per request. Each load runs at peak (``--connections``); repairbot's servers
run it again paced at half of their own peak, for p99, once the peak's writes are flushed to
disk. Afterwards the stored rows are counted against the requests answered 202: lost =
accepted but not stored; duplicated = a new id answered as a redelivery, or stored twice.
Targets (issue #13): >= 0.5x the bare (auth only) rate on both databases, p99 <= 50 ms at half
of peak, 0 lost, 0 duplicated.

On this 2-core machine one server's rate moves by up to 15% between runs minutes apart, so a
ratio of two runs is no better. ``--rounds N`` starts every server N times in turn, takes each
ratio against the bare run of its own round (each round on fresh data) and ends with each
figure's range over the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import create_engine, text

from bench.harness import CI_TOKEN, WEBHOOK_SECRET, bench_parser, serve_command, service_env
from bench.harness import serving as serving_process
from bench.load import Load, LoadResult, run_wrk, wrk_binary
from bench.service import BIN, free_port
from bot.intake.webhook_auth import sign

if TYPE_CHECKING:
    from rich.console import Console

PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
BARE = "bare (auth only)"
COMPRESSION_FLOOR = "bare + zstd (no DB)"
CONSOLE_LOAD = "1 MB console log"
TARGET_RATIO = 0.5  # of the bare (auth only) rate, issue #13
TARGET_PACED_P99_MS = 50.0
SAMPLE_LOG = Path(__file__).resolve().parents[1] / "fixers" / "samples" / "l0_merge_request_pr.log"
WARM_UP_S = 2.0
DELIVERY_BYTES = 8 * 1024
REPORT_BYTES = 1024 * 1024


def issues_delivery(size: int) -> bytes:
    """A GitHub ``issues`` delivery of about ``size`` bytes (the issue's body fills it)."""
    payload = {"action": "opened", "issue": {"number": 7, "title": "flaky test", "body": ""}}
    padding = size - len(json.dumps(payload))
    payload["issue"]["body"] = "x" * max(0, padding)  # type: ignore[index]
    return json.dumps(payload).encode()


def console_log(size: int) -> bytes:
    """About ``size`` bytes of Jenkins console output ending in the sample L0 failure."""
    tail = SAMPLE_LOG.read_bytes()
    lines, total, index = [], len(tail), 0
    while total < size:
        line = f"[2026-11-30T10:{index // 60 % 60:02d}:{index % 60:02d}Z] building layer {index}\n"
        lines.append(line.encode())
        total += len(lines[-1])
        index += 1
    return b"".join(lines) + tail


@dataclass(frozen=True)
class Scenario:
    """A load, how to count what it left in the database (``{run}`` is the run id), and the
    options ``repairbot serve`` runs with for it."""

    name: str
    load: Load
    count_sql: str
    serve_options: tuple[str, ...] = ()


def scenarios(folder: Path) -> list[Scenario]:
    """The two loads, their bodies written under ``folder``."""
    delivery = folder / "issues.json"
    delivery.write_bytes(issues_delivery(DELIVERY_BYTES))
    report = folder / "console.log"
    report.write_bytes(console_log(REPORT_BYTES))
    signed = {
        "X-GitHub-Event": "issues",
        "X-Hub-Signature-256": sign(WEBHOOK_SECRET.encode(), delivery.read_bytes()),
        "Content-Type": "application/json",
    }
    ci = {"Authorization": f"Bearer {CI_TOKEN}", "Content-Type": "text/plain"}
    return [
        Scenario(
            "8 KB issues delivery",
            Load("/webhooks/github", delivery, signed, "X-GitHub-Delivery"),
            "SELECT count(*), count(DISTINCT key) FROM deliveries WHERE key LIKE 'github:{run}-%'",
        ),
        Scenario(
            CONSOLE_LOAD,
            Load("/api/v1/ci-failures?format=console", report, ci, "Idempotency-Key"),
            "SELECT count(*), count(DISTINCT idempotency_key) FROM reports "
            "WHERE idempotency_key LIKE '{run}-%'",
            # Each report queues a triage of 1 MB of log: an in-process worker would spend the
            # CPU the intake is measured on. The API runs alone, as when workers are scaled out.
            ("--no-worker",),
        ),
    ]


@dataclass(frozen=True)
class Measured:
    """One load on one server: its peak, the paced run (repairbot only) and the rows it left."""

    peak: LoadResult
    paced: LoadResult | None = None
    stored: int = 0
    distinct: int = 0

    @property
    def accepted(self) -> int:
        """Requests answered 202 over both runs."""
        return self.peak.accepted + (self.paced.accepted if self.paced else 0)

    @property
    def repeated(self) -> int:
        """New ids answered as a redelivery over both runs."""
        return self.peak.repeated + (self.paced.repeated if self.paced else 0)


@dataclass(frozen=True)
class Server:
    """A server to start: its name, command line, extra environment, database (None: bare) and
    the one load it runs (None: all)."""

    name: str
    command: Callable[..., list[str]]
    database_url: str | None
    env: dict[str, str]
    only_load: str | None = None


def bare_command(port: int, *_options: str) -> list[str]:
    """The bare endpoints (bench/bare_webhook_app.py) under uvicorn on ``port``."""
    app = "bench.bare_webhook_app:app"
    return [str(BIN / "uvicorn"), app, "--port", str(port), "--log-level", "warning"]


def measure(
    server: Server, url: str, scenario: Scenario, connections: int, seconds: float
) -> Measured:
    """Warm up, run at peak, then (repairbot) paced at half of that; count the stored rows."""
    load, tag = scenario.load, uuid.uuid4().hex[:8]
    run_wrk(url, load, f"warm{tag}", connections=connections, seconds=WARM_UP_S)
    peak = run_wrk(url, load, f"peak{tag}", connections=connections, seconds=seconds)
    if server.database_url is None:
        return Measured(peak)
    # The peak leaves up to a few GB of dirty pages (WAL, checkpoints); the kernel writing them
    # back would land on the paced run's fsyncs. Flushed here, the p99 is the paced load's own.
    os.sync()
    # Each connection waits a random delay of this mean before each request: about half the rate.
    mean_delay_ms = 1000 * connections / (peak.rate / 2)
    paced = run_wrk(
        url,
        load,
        f"paced{tag}",
        connections=connections,
        seconds=seconds,
        mean_delay_ms=mean_delay_ms,
    )
    stored = distinct = 0
    engine = create_engine(server.database_url)
    with engine.connect() as connection:
        for run in (f"peak{tag}", f"paced{tag}"):
            row = connection.execute(text(scenario.count_sql.format(run=run))).one()
            stored, distinct = stored + row[0], distinct + row[1]
    engine.dispose()
    return Measured(peak, paced, stored, distinct)


@contextmanager
def postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database for this run, dropped afterwards."""
    name = f"repairbot_bench_{os.getpid()}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def servers(root: Path, postgres_url: str) -> list[Server]:
    """Bare, bare + zstd, repairbot on SQLite and on PostgreSQL; data kept under ``root``."""
    bare = {"BENCH_SECRET": WEBHOOK_SECRET, "BENCH_CI_TOKEN": CI_TOKEN}
    floor = {**bare, "BENCH_COMPRESS_REPORTS": "1"}
    sqlite_data, pg_data = root / "sqlite-data", root / "pg-data"
    sqlite_url = f"sqlite:///{sqlite_data / 'repairbot.db'}"
    return [
        Server(BARE, bare_command, None, service_env(root, root, **bare)),
        Server(
            COMPRESSION_FLOOR, bare_command, None, service_env(root, root, **floor), CONSOLE_LOAD
        ),
        Server("repairbot, SQLite", serve_command, sqlite_url, service_env(sqlite_data, root)),
        Server(
            "repairbot, PostgreSQL",
            serve_command,
            postgres_url,
            service_env(pg_data, root, REPAIRBOT_DATABASE_URL=postgres_url),
        ),
    ]


Results = dict[tuple[str, str], Measured]  # by (server, load)


def print_results(console: Console, loads: list[Scenario], results: Results, title: str) -> None:
    """Per load: each server's peak, ratios to bare (and to bare + zstd where it ran), paced p99
    and rows stored vs accepted."""
    for scenario in loads:
        console.rule(f"{title}{scenario.name}")
        bare = results[(BARE, scenario.name)].peak
        floor = results.get((COMPRESSION_FLOOR, scenario.name))
        for (server, name), measured in results.items():
            if name != scenario.name:
                continue
            peak = measured.peak
            line = (
                f"{server:22} {peak.rate:8.0f} req/s  p50 {peak.p50_ms:6.1f} ms  "
                f"p99 {peak.p99_ms:7.1f} ms  wrk {peak.client_cpu:.0%} of a core"
            )
            if server == COMPRESSION_FLOOR:
                line += f"\n{'':22} ratio to bare {peak.rate / bare.rate:.2f}x"
            if measured.paced is not None:
                paced = measured.paced
                lost = max(0, measured.accepted - measured.stored)
                duplicated = measured.repeated + (measured.stored - measured.distinct)
                line += (
                    f"\n{'':22} ratio to bare {peak.rate / bare.rate:.2f}x "
                    f"(target >= {TARGET_RATIO:.2f}x); at {paced.rate:.0f} req/s p99 "
                    f"{paced.p99_ms:.1f} ms (target <= {TARGET_PACED_P99_MS:.0f} ms); "
                    f"stored {measured.stored} of {measured.accepted} accepted: "
                    f"lost {lost}, duplicated {duplicated}, refused {peak.refused + paced.refused}"
                    f", socket errors {peak.socket_errors + paced.socket_errors}"
                )
                if floor is not None:
                    line += f"; ratio to bare + zstd {peak.rate / floor.peak.rate:.2f}x"
            console.print(line, soft_wrap=True)  # one line per figure, also in logs


def spread(values: list[float], unit: str = "", digits: int = 2) -> str:
    """``median (min-max)`` of ``values``, each followed by ``unit``."""
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:.{digits}f}{unit} ({low:.{digits}f}-{high:.{digits}f}{unit})"


def print_summary(console: Console, loads: list[Scenario], rounds: list[Results]) -> None:
    """Per load and repairbot server: median and range over the rounds of the ratio to bare
    (each against its own round's bare run), of the paced p99, and the rounds meeting each
    target."""
    console.rule(f"{len(rounds)} rounds")
    for scenario in loads:
        servers_run = [s for s, load in rounds[0] if load == scenario.name and s != BARE]
        for server in servers_run:
            runs = [results[(server, scenario.name)] for results in rounds]
            bares = [results[(BARE, scenario.name)].peak.rate for results in rounds]
            ratios = [run.peak.rate / bare for run, bare in zip(runs, bares, strict=True)]
            line = f"{scenario.name:22} {server:22} ratio to bare {spread(ratios, 'x')}"
            paced = [run.paced.p99_ms for run in runs if run.paced is not None]
            if paced:
                rate_met = sum(ratio >= TARGET_RATIO for ratio in ratios)
                p99_met = sum(p99 <= TARGET_PACED_P99_MS for p99 in paced)
                line += (
                    f", paced p99 {spread(paced, ' ms', 1)}; rounds meeting >= {TARGET_RATIO}x: "
                    f"{rate_met} of {len(runs)}, p99 <= {TARGET_PACED_P99_MS:.0f} ms: "
                    f"{p99_met} of {len(runs)}"
                )
            console.print(line, soft_wrap=True)  # one line per figure, also in logs


def run_round(
    console: Console, root: Path, loads: list[Scenario], postgres_url: str, args: argparse.Namespace
) -> Results:
    """Start each server in turn and run its loads on it."""
    results: Results = {}
    for server in servers(root, postgres_url):
        for scenario in loads:
            if server.only_load not in (None, scenario.name):
                continue
            port = free_port()
            command = server.command(port, *scenario.serve_options)
            ready = "/healthz" if server.database_url is None else "/readyz"
            log = root / f"server-{port}.log"
            with (
                serving_process(command, port, server.env, log, ready) as url,
                console.status(f"{server.name}: {scenario.name}"),
            ):
                results[(server.name, scenario.name)] = measure(
                    server, url, scenario, args.connections, args.seconds
                )
    return results


def main() -> None:
    """Start each server in turn, run both loads on it (``--rounds`` times), print the figures."""
    parser = bench_parser(__doc__)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    wrk_binary()
    from rich.console import Console

    console = Console()
    rounds: list[Results] = []
    for number in range(1, args.rounds + 1):
        # Fresh data each round: the 1 MB reports leave their triage tasks in the broker and
        # the database, and the next round's 8 KB servers (with a worker) would run them.
        with (
            tempfile.TemporaryDirectory(prefix="repairbot-bench-") as tmp,
            postgres_database() as pg,
        ):
            root = Path(tmp)
            loads = scenarios(root)
            rounds.append(run_round(console, root, loads, pg, args))
        title = f"round {number}: " if args.rounds > 1 else ""
        print_results(console, loads, rounds[-1], title)
    if len(rounds) > 1:
        print_summary(console, loads, rounds)


if __name__ == "__main__":
    main()
