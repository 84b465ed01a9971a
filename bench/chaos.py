"""Chaos soak: two API replicas and three workers on a PostgreSQL and a Redis of their own, under
mixed traffic, while every fault an operator fears is done to them; then every kind of effect is
counted, on the database and on the GitHub double.

Run: .venv/bin/python bench/chaos.py [--minutes 10] [--repos 6] [--prs 3] [--faults all]

Faults, in this order over the middle of the run (``--faults`` picks some, comma-separated):
``kill-worker`` (SIGKILL a worker mid-repair), ``kill-api`` (SIGKILL an API replica mid-burst),
``restart-redis`` (nothing saved), ``restart-postgres`` (a crash-stop, down for 5 s),
``pause-worker`` (SIGSTOP past the broker's visibility timeout and the reconciler's staleness,
then SIGCONT). The first fifth of the run is the baseline for latencies.

It prints one table of effects per kind (expected, there, lost, duplicated, unfinished), then
p99 per request kind before and during the faults, then one line
``lost: N, duplicated: N, unfinished: N``, and exits 1 unless all three are 0.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.chaos_count import RERUN_COMMAND, Row, count_all
from bench.chaos_stack import ChaosStack
from bench.chaos_traffic import MAINTAINER, Ledger, Sender, Target, sending, traffic
from bench.harness import bench_parser, percentile_ms
from bench.postgres_server import PrivatePostgres
from bench.service import free_port
from bench.soak import soak_env, start_github, start_redis
from bot.cli.demo_target import build_target, run_tests
from bot.git import commit_all, git
from tests.fakes.github_api import FakeGitHub

FAULTS = ("kill-worker", "kill-api", "restart-redis", "restart-postgres", "pause-worker")
ROLES = ("open", "merge", "close")
VISIBILITY_TIMEOUT_S = 120  # longer than the longest task (a verification: about 80 s here)
STALE_AFTER_S = 45
DRAIN_TIMEOUT_S = 900
# Work the stack still owes: deliveries, reports, runs, verifications, deferred GitHub writes
# and fan-out notices not yet sent.
OWED = (
    "SELECT (SELECT count(*) FROM deliveries WHERE source = 'github' AND outcome = 'stored')"
    " + (SELECT count(*) FROM reports WHERE classified_at IS NULL)"
    " + (SELECT count(*) FROM repair_runs"
    "    WHERE state IN ('received','classified','swept','patched','verifying'))"
    " + (SELECT count(*) FROM verifications WHERE state IN ('queued','running'))"
    " + (SELECT count(*) FROM github_writes"
    "    WHERE remote_id IS NULL AND error IS NULL AND request IS NOT NULL)"
    " + (SELECT count(*) FROM pr_notices n JOIN fixes f ON f.id = n.fix_id"
    "    WHERE n.state = 'pending' AND f.pr_number IS NOT NULL)"
)


@dataclass
class Result:
    """What a chaos run found."""

    rows: list[Row]
    faults: list[str]
    ledger: Ledger
    first_fault_at: float
    traffic_ended_at: float
    drained_s: float
    logs: Path
    lines: list[str] = field(default_factory=list)

    @property
    def lost(self) -> int:
        """Effects missing, over every kind."""
        return sum(row.lost for row in self.rows)

    @property
    def duplicated(self) -> int:
        """Effects made more than once, over every kind."""
        return sum(row.duplicated for row in self.rows)

    @property
    def unfinished(self) -> int:
        """Work left undone after the drain, over every kind."""
        return sum(row.unfinished for row in self.rows)


def chaos_env(root: Path, db_url: str, broker: str, github: FakeGitHub) -> dict[str, str]:
    """The soak's environment with the chaos timers: a short visibility timeout and staleness,
    so a paused worker's work is taken over within the run."""
    return {
        **soak_env(root, db_url, broker, github),
        "REPAIRBOT_BROKER_VISIBILITY_TIMEOUT_S": str(VISIBILITY_TIMEOUT_S),
        "REPAIRBOT_STALE_AFTER_S": str(STALE_AFTER_S),
        "REPAIRBOT_RECONCILE_INTERVAL_S": "5",
    }


def publish_targets(github: FakeGitHub, root: Path, repos: int, prs: int) -> list[Target]:
    """``repos`` repositories whose ``main`` holds one root cause (and a re-run command for
    fan-out), each with ``prs`` open human PRs branched from it."""
    targets = []
    for index in range(repos):
        source = root / f"source-{index}"
        build_target(source)
        (source / ".repairbot.toml").write_text(f'[fan_out]\nrerun_command = "{RERUN_COMMAND}"\n')
        main = commit_all(source, "Let repairbot re-run PR pipelines")
        heads = []
        for pr in range(prs):
            git(source, "checkout", "--quiet", "-b", f"dev/pr-{pr}", "main")
            (source / "docs").mkdir(exist_ok=True)
            (source / "docs" / f"pr-{pr}.md").write_text(f"PR {pr}'s own change\n")
            heads.append(commit_all(source, f"PR {pr}'s own change"))
        git(source, "checkout", "--quiet", "main")
        name = f"acme/trt-{index}"
        repo = github.create_repo(name, source)
        repo.permissions[MAINTAINER] = "write"  # the stranger has no standing
        numbers = [
            github.open_pull(name, head=f"dev/pr-{pr}", title=f"[None][feat] {pr}")
            for pr in range(prs)
        ]
        targets.append(
            Target(name, ROLES[index % len(ROLES)], dict(zip(numbers, heads, strict=True)), main)
        )
    return targets


def inject(stack: ChaosStack, faults: list[str], seconds: float, began: float) -> list[str]:
    """Do ``faults`` in order, spread over 25%..75% of the run; their report lines."""
    done = []
    for index, fault in enumerate(faults):
        at = began + seconds * (0.25 + 0.5 * index / max(len(faults), 1))
        time.sleep(max(0.0, at - time.monotonic()))
        if fault == "kill-worker":
            done.append(stack.kill_worker_mid_repair())
        elif fault == "kill-api":
            done.append(stack.kill_api_replica())
        elif fault == "restart-redis":
            done.append(stack.restart_redis())
        elif fault == "restart-postgres":
            done.append(stack.restart_postgres())
        elif fault == "pause-worker":
            done.append(stack.pause_worker(max(STALE_AFTER_S, VISIBILITY_TIMEOUT_S) + 10))
    return done


def drain(db_url: str, timeout_s: float = DRAIN_TIMEOUT_S) -> float:
    """Wait until the stack owes no work (or ``timeout_s``); how long it took."""
    engine = create_engine(db_url)
    began = time.monotonic()
    try:
        while time.monotonic() - began < timeout_s:
            try:
                with engine.connect() as connection:
                    if int(connection.execute(text(OWED)).scalar_one()) == 0:
                        break
            except OperationalError:  # PostgreSQL may be coming back: ask again
                pass
            time.sleep(2)
    finally:
        engine.dispose()
    return time.monotonic() - began


def run_chaos(
    minutes: float, repos: int, prs: int, faults: list[str], *, keep_database: bool = False
) -> Result:
    """Start everything, send traffic through the faults, drain, count; stop everything
    (``keep_database``: PostgreSQL's folder stays, stopped, for a look afterwards)."""
    root = Path(tempfile.mkdtemp(prefix="repairbot-chaos-"))
    postgres = PrivatePostgres().start()
    db_url = postgres.create_database("repairbot")
    redis_port = free_port()
    redis = start_redis(redis_port)
    github, github_server = start_github(root / "github")
    targets = publish_targets(github, root, repos, prs)
    console = run_tests(root / "source-0").console
    env = chaos_env(root, db_url, f"redis://127.0.0.1:{redis_port}/0", github)
    stack = ChaosStack(root, env, postgres, redis, redis_port).launch()
    ledger = Ledger()
    seconds = minutes * 60
    began = time.monotonic()
    try:
        with sending(stack.urls, ledger) as replicas:
            sender = Sender(replicas, github, targets, console, ledger, root)
            thread = threading.Thread(
                target=traffic, args=(sender, began + seconds, began + 0.35 * seconds,
                                      began + 0.6 * seconds),
            )  # fmt: skip
            thread.start()
            done = inject(stack, faults, seconds, began)
            thread.join()
        ended = time.monotonic()
        # From the end of the traffic: the faults may end later (a paused worker resumes).
        drained_s = drain(db_url) + (ended - min(ended, began + seconds))
        engine = create_engine(db_url)
        with engine.connect() as connection:
            rows = count_all(connection, github, targets, ledger)
        engine.dispose()
    finally:
        stack.stop(keep_database=keep_database)
        github_server.shutdown()
    first = began + seconds * 0.25 if faults else ended
    return Result(rows, done, ledger, first, ended, drained_s, root)


def latency_lines(result: Result) -> list[str]:
    """p99 per request kind before the first fault and during the faults."""
    lines = []
    for kind, samples in sorted(result.ledger.latencies.items()):
        before = [s for at, s in samples if at < result.first_fault_at]
        during = [s for at, s in samples if result.first_fault_at <= at <= result.traffic_ended_at]
        if not before or not during:
            continue
        lines.append(
            f"{kind:12} before: n={len(before):5} p99 {percentile_ms(before, 0.99):8.1f} ms   "
            f"during: n={len(during):5} p99 {percentile_ms(during, 0.99):8.1f} ms"
        )
    return lines


def report(result: Result) -> None:
    """Print the effects table, the latencies and the one-line verdict."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for fault in result.faults:
        console.print(f"fault: {fault}")
    table = Table("kind", "expected", "there", "lost", "duplicated", "unfinished")
    for row in result.rows:
        table.add_row(row.kind, *(str(v) for v in (row.expected, row.effects, row.lost,
                                                    row.duplicated, row.unfinished)))  # fmt: skip
    console.print(table)
    for row in result.rows:
        if row.lost or row.duplicated:
            for example in row.examples[:5]:
                console.print(f"  {row.kind}: {example}")
    ledger = result.ledger
    console.print(
        f"forged signatures: {ledger.forged} sent, {ledger.forged_accepted} accepted; "
        f"tries without an answer (sent again): {ledger.retries}; "
        f"never accepted after every try: {len(ledger.refused)}; "
        f"everything done {result.drained_s:.0f} s after the traffic ended"
    )
    for line in latency_lines(result):
        console.print(line)
    console.print(
        f"[bold]lost: {result.lost}, duplicated: {result.duplicated}, "
        f"unfinished: {result.unfinished}[/bold]"
    )
    console.print(f"logs: {result.logs}")


def main() -> None:
    """Parse the options, run the chaos soak, report; exit 1 on any lost, duplicated or
    unfinished effect."""
    parser = bench_parser(__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--repos", type=int, default=6)
    parser.add_argument("--prs", type=int, default=3)
    parser.add_argument("--faults", default="all", help=f"all, or some of {','.join(FAULTS)}")
    parser.add_argument(
        "--keep-database", action="store_true", help="leave PostgreSQL's folder (stopped)"
    )
    args = parser.parse_args()
    faults = list(FAULTS) if args.faults == "all" else args.faults.split(",")
    unknown = set(faults) - set(FAULTS)
    if unknown:
        parser.error(f"unknown faults: {', '.join(sorted(unknown))}")
    try:
        result = run_chaos(
            args.minutes, args.repos, args.prs, faults, keep_database=args.keep_database
        )
    except subprocess.CalledProcessError as exc:
        raise SystemExit(f"setting up failed: {exc}") from exc
    report(result)
    sys.exit(1 if result.lost or result.duplicated or result.unfinished else 0)


if __name__ == "__main__":
    main()
