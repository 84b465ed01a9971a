"""Soak: the scaled-out stack under mixed traffic for ten minutes, with a worker killed and Redis
restarted, then counted: processed, lost, duplicated, and p99 latencies.

Run: .venv/bin/python bench/soak.py [--minutes 10] [--repos 4]

The stack is real: PostgreSQL (a fresh database) and a Redis server of its own, `repairbot serve
--no-worker` (API + reconciler) and two `repairbot worker -Q repair,cpu` processes. GitHub is our
test double (tests/fakes/github_api.py, a real HTTP server with bare git repositories), the only
thing that cannot be reached here. Traffic, all signed and all through HTTP:
- CI failures: each repository fails again and again (one root cause each: one PR each);
- GitHub deliveries: comments, 10% redeliveries of earlier ones, 5% forged signatures;
- `/bot run` comments from a maintainer on the fix PRs (each starts a verification).
At a third of the run one worker is killed with SIGKILL (a new one starts); at two thirds Redis
is killed (nothing saved) and started again. Afterwards the stack drains and is counted; the
baseline for latencies is the same requests before the first fault.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import bench_parser, local_url, percentile_ms, serve_command, service_env
from bench.service import BIN, free_port, start, stop
from bench.soak_traffic import CI_TOKEN, SECRET, Repos, Tally, traffic
from bot.cli.demo_target import build_target, run_tests
from tests.fakes.github_api import TOKEN, FakeGitHub, _make_handler
from tests.fakes.github_routes import ROUTES

if TYPE_CHECKING:
    from rich.console import Console

PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
LIVE_RUNS = "('received','classified','swept','patched','verifying')"


def start_redis(port: int) -> subprocess.Popen[bytes]:
    """A Redis of the soak's own (nothing persisted), so restarting it disturbs nobody else."""
    command = ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", ""]
    process = subprocess.Popen(
        [*command, "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    for _ in range(100):
        if (
            subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).returncode
            == 0
        ):
            return process
        time.sleep(0.1)
    raise SystemExit(f"redis-server did not start on port {port}")


def start_github(root: Path) -> tuple[FakeGitHub, ThreadingHTTPServer]:
    """The GitHub test double, serving from a thread, with its repositories under ``root``."""
    state = FakeGitHub(root=root)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(state, ROUTES))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return state, server


def start_worker(env: dict[str, str], log: Path, name: str) -> subprocess.Popen[bytes]:
    """A ``repairbot worker`` named ``name`` for the repair and cpu queues."""
    return subprocess.Popen(
        [str(BIN / "repairbot"), "worker", "-Q", "repair,cpu", "-n", f"{name}@%h"],
        env={**os.environ, **env},
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


@dataclass
class Stack:
    """The soak's own processes: Redis, the API and the workers, and what restarting them needs."""

    root: Path
    env: dict[str, str]
    redis: subprocess.Popen[bytes]
    redis_port: int
    api: subprocess.Popen[bytes]
    api_url: str
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @classmethod
    def launch(
        cls, root: Path, env: dict[str, str], redis: subprocess.Popen[bytes], redis_port: int
    ) -> Stack:
        """Start the API (with the reconciler, without a worker) and two workers beside Redis."""
        port = free_port()
        api = start(
            serve_command(port, "--no-worker"), env, root / "api.log", f"{local_url(port)}/readyz"
        )
        workers = [start_worker(env, root / f"worker{i}.log", f"w{i}") for i in range(2)]
        return cls(root, env, redis, redis_port, api, local_url(port), workers)

    def kill_worker(self) -> str:
        """SIGKILL worker w0 and start w2 in its place; returns the fault's line."""
        os.killpg(self.workers[0].pid, signal.SIGKILL)
        self.workers[0].wait()
        fault = f"{time.strftime('%H:%M:%S')} worker w0 killed with SIGKILL"
        self.workers[0] = start_worker(self.env, self.root / "worker2.log", "w2")
        return fault

    def restart_redis(self) -> str:
        """Kill Redis (nothing persisted) and start it again; returns the fault's line."""
        self.redis.kill()
        self.redis.wait()
        time.sleep(3)
        self.redis = start_redis(self.redis_port)
        return f"{time.strftime('%H:%M:%S')} Redis killed (nothing persisted) and restarted"

    def stop(self) -> None:
        """SIGTERM the workers, stop the API and terminate Redis."""
        for process in self.workers:
            os.killpg(process.pid, signal.SIGTERM)
        stop(self.api)
        self.redis.terminate()


def soak_env(root: Path, db_url: str, broker: str, github: FakeGitHub) -> dict[str, str]:
    """The scaled-out stack's environment: PostgreSQL, Redis, the GitHub double, fast timers."""
    return service_env(
        root / "data",
        root,
        webhook_secret=SECRET,
        ci_token=CI_TOKEN,
        REPAIRBOT_DATABASE_URL=db_url,
        REPAIRBOT_BROKER_URL=broker,
        REPAIRBOT_GITHUB_API_URL=github.url,
        REPAIRBOT_GITHUB_TOKEN=TOKEN,
        REPAIRBOT_GITHUB_GIT_URL_TEMPLATE=github.git_url_template,
        REPAIRBOT_GITHUB_SECONDS_BETWEEN_WRITES="0",
        REPAIRBOT_EMBEDDED_WORKER="false",
        REPAIRBOT_RECONCILE_INTERVAL_S="5",
        REPAIRBOT_STALE_AFTER_S="120",
        REPAIRBOT_VERIFY_FALLBACK_AFTER_S="5",
    )


def publish_targets(github: FakeGitHub, root: Path, count: int) -> Repos:
    """``count`` target repositories on the GitHub double, the maintainer allowed to write."""
    repos = []
    for index in range(count):
        source = root / f"source-{index}"
        head = build_target(source)
        name = f"acme/trt-{index}"
        repo = github.create_repo(name, source)
        repo.permissions["maintainer"] = "write"
        repos.append((name, head))
    return repos


def inject_faults(stack: Stack, seconds: float) -> list[str]:
    """At a third of ``seconds`` kill a worker, at two thirds restart Redis; the fault lines."""
    time.sleep(seconds / 3)
    faults = [stack.kill_worker()]
    time.sleep(seconds / 3)
    faults.append(stack.restart_redis())
    return faults


# A GitHub delivery still waiting for process_delivery. A CI report's body is a ``ci`` delivery
# that stays ``stored``: its work is the report's triage, counted by ``classified_at``.
UNPROCESSED_DELIVERY = "source = 'github' AND outcome = 'stored'"


def wait_until_drained(engine: Engine, timeout_s: float = 900) -> None:
    """Poll until no delivery, report, run or verification is left to process (or time is up)."""
    deadline = time.monotonic() + timeout_s
    while True:
        with engine.connect() as connection:
            pending = connection.execute(
                text(
                    f"SELECT (SELECT count(*) FROM deliveries WHERE {UNPROCESSED_DELIVERY})"
                    " + (SELECT count(*) FROM reports WHERE classified_at IS NULL)"
                    f" + (SELECT count(*) FROM repair_runs WHERE state IN    {LIVE_RUNS})"
                    " + (SELECT count(*) FROM verifications"
                    "    WHERE state IN ('queued','running'))"
                )
            ).scalar_one()
        if pending == 0 or time.monotonic() > deadline:
            return
        time.sleep(2)


@dataclass(frozen=True)
class Counts:
    """What the database holds after the drain."""

    stored: set[str]
    unprocessed: int
    reports: int
    unclassified: int
    live_runs: int
    prs: list[tuple[str, int]]
    verifications: list[tuple[str, int]]
    double_writes: int


def count(connection: Connection) -> Counts:
    """Count the stored deliveries, reports, runs, fix PRs, verifications and double writes."""

    def scalar(sql: str) -> int:
        return int(connection.execute(text(sql)).scalar_one())

    def pairs(sql: str) -> list[tuple[str, int]]:
        return [(str(key), int(number)) for key, number in connection.execute(text(sql))]

    return Counts(
        stored={
            key.removeprefix("github:")
            for (key,) in connection.execute(
                text("SELECT key FROM deliveries WHERE source = 'github'")
            )
        },
        unprocessed=scalar(f"SELECT count(*) FROM deliveries WHERE {UNPROCESSED_DELIVERY}"),
        reports=scalar("SELECT count(*) FROM reports"),
        unclassified=scalar("SELECT count(*) FROM reports WHERE classified_at IS NULL"),
        live_runs=scalar(f"SELECT count(*) FROM repair_runs WHERE state IN {LIVE_RUNS}"),
        prs=pairs("SELECT repository, count(*) FROM fixes GROUP BY repository"),
        verifications=pairs("SELECT state, count(*) FROM verifications GROUP BY state"),
        double_writes=scalar("SELECT count(*) - count(DISTINCT key) FROM github_writes"),
    )


def drain_and_count(db_url: str, console: Console) -> Counts:
    """Wait for the stack to finish its work, then count what the database holds."""
    engine = create_engine(db_url)
    with console.status("draining: waiting for every delivery, report, run and verification"):
        wait_until_drained(engine)
    with engine.connect() as connection:
        counts = count(connection)
    engine.dispose()
    return counts


def lost_and_duplicated(tally: Tally, counts: Counts, repos: Repos) -> tuple[int, int]:
    """What was sent but not processed (or has no PR), and what was processed twice."""
    lost = (
        len(tally.valid_deliveries - counts.stored)
        + counts.unprocessed
        + (len(tally.failures) - counts.reports)
        + counts.unclassified
        + counts.live_runs
    )
    lost += sum(1 for name, _ in repos if name not in {r for r, _ in counts.prs})
    duplicated = sum(n - 1 for _, n in counts.prs if n > 1) + max(0, counts.double_writes)
    return lost, duplicated


def summary(
    minutes: float, faults: list[str], tally: Tally, counts: Counts, repos: Repos
) -> list[str]:
    """The lines of the soak's report (rich markup), latencies last."""
    lost, duplicated = lost_and_duplicated(tally, counts, repos)
    lines = [
        f"ran {minutes:.1f} min; faults: " + "; ".join(faults),
        f"deliveries: {len(tally.valid_deliveries)} valid unique sent, {len(counts.stored)} "
        f"stored, {counts.unprocessed} unprocessed; forged {tally.forged}, accepted "
        f"{tally.forged_accepted}",
        f"failures: {len(tally.failures)} posted, {counts.reports} stored, {counts.unclassified} "
        f"unclassified; runs still live: {counts.live_runs}",
        f"fix PRs per repository: {dict(counts.prs)} (expected 1 each); "
        f"verifications: {dict(counts.verifications)}; "
        f"/bot run commands: {tally.commands}",
        f"[bold]lost: {lost}, duplicated: {duplicated}[/bold]; "
        f"client errors during faults: {len(tally.errors)}",
    ]
    for kind, values in sorted(tally.latencies.items()):
        lines.append(
            f"  {kind:12} n={len(values):5}  p50 {percentile_ms(values, 0.5):7.1f} ms  "
            f"p99 {percentile_ms(values, 0.99):7.1f} ms"
        )
    return lines


def main() -> None:
    """Start the stack, run the traffic through the faults, drain, count and report."""
    parser = bench_parser(__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--repos", type=int, default=4)
    args = parser.parse_args()
    from rich.console import Console

    console = Console()
    root = Path(tempfile.mkdtemp(prefix="repairbot-soak-"))
    database = f"repairbot_soak_{uuid.uuid4().hex[:8]}"
    admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{database}"'))
    db_url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{database}"
    redis_port = free_port()
    redis = start_redis(redis_port)
    broker = f"redis://127.0.0.1:{redis_port}/0"
    github, github_server = start_github(root / "github")
    with console.status("building target repositories"):
        repos = publish_targets(github, root, args.repos)
        failing_console = run_tests(root / "source-0").console
    stack = Stack.launch(root, soak_env(root, db_url, broker, github), redis, redis_port)
    tally = Tally()
    seconds = args.minutes * 60
    until = time.monotonic() + seconds
    sender = threading.Thread(
        target=traffic,
        args=(stack.api_url, github, repos, failing_console, tally, until, db_url),
    )
    sender.start()
    faults = inject_faults(stack, seconds)
    sender.join()
    counts = drain_and_count(db_url, console)
    stack.stop()
    github_server.shutdown()
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
    for line in summary(args.minutes, faults, tally, counts, repos):
        console.print(line)
    console.print(f"logs: {root}")


if __name__ == "__main__":
    main()
