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

import argparse
import json
import os
import random
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

import httpx
from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.service import BIN, free_port, percentile, start, stop
from bot.demo import build_target, run_tests
from bot.github.signature import sign
from tests.fakes.github_api import TOKEN, FakeGitHub, _make_handler
from tests.fakes.github_routes import ROUTES

SECRET = "soak-webhook-secret-0123456789"
CI_TOKEN = "soak-ci-token-0123456789"
PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


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


@dataclass
class Tally:
    """What the traffic sent and how long each kind of request took."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    valid_deliveries: set[str] = field(default_factory=set)
    forged: int = 0
    forged_accepted: int = 0
    failures: set[tuple[str, int]] = field(default_factory=set)
    commands: int = 0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def took(self, kind: str, seconds: float) -> None:
        with self.lock:
            self.latencies.setdefault(kind, []).append(seconds)


def start_github(root: Path) -> tuple[FakeGitHub, ThreadingHTTPServer]:
    state = FakeGitHub(root=root)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(state, ROUTES))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return state, server


def signed_post(
    client: httpx.Client,
    event: str,
    delivery: str,
    payload: dict[str, object],
    *,
    forge_signature: bool = False,
) -> httpx.Response:
    body = json.dumps(payload).encode()
    signature = "sha256=" + "0" * 64 if forge_signature else sign(SECRET.encode(), body)
    return client.post(
        "/webhooks/github",
        content=body,
        headers={
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery,
            "Content-Type": "application/json",
            "X-Hub-Signature-256": signature,
        },
    )


def traffic(
    url: str,
    github: FakeGitHub,
    repos: list[tuple[str, str]],
    console: bytes,
    tally: Tally,
    until: float,
    engine_url: str,
) -> None:
    """Mixed traffic until ``until``: failures every ~5 s, comments ~10/s, /bot run every ~90 s."""
    rng = random.Random(1)
    sent: list[tuple[str, dict[str, object]]] = []
    build = 0
    next_failure = next_command = time.monotonic()
    engine = create_engine(engine_url)
    with httpx.Client(base_url=url, timeout=60) as client:
        while time.monotonic() < until:
            now = time.monotonic()
            try:
                if now >= next_failure:
                    build += 1
                    name, head = repos[build % len(repos)]
                    began = time.perf_counter()
                    answer = client.post(
                        "/api/v1/ci-failures",
                        content=console,
                        params={
                            "pipeline": "L0_MergeRequest_PR",
                            "build_number": build,
                            "repository": name,
                            "head_sha": head,
                            "base_ref": "main",
                        },
                        headers={"Authorization": f"Bearer {CI_TOKEN}"},
                    )
                    tally.took("ci-failure", time.perf_counter() - began)
                    answer.raise_for_status()
                    tally.failures.add(("L0_MergeRequest_PR", build))
                    next_failure = now + 5
                if now >= next_command:
                    with engine.connect() as connection:
                        numbers = connection.execute(
                            text(
                                "SELECT repository, pr_number FROM fixes"
                                " WHERE pr_number IS NOT NULL"
                            )
                        ).all()
                    if numbers:
                        repository, number = rng.choice(numbers)
                        payload = github.comment_event(
                            repository, number, "/bot run", login="maintainer"
                        )
                        delivery = f"cmd-{uuid.uuid4()}"
                        began = time.perf_counter()
                        answer = signed_post(client, "issue_comment", delivery, payload)
                        tally.took("bot-command", time.perf_counter() - began)
                        if answer.status_code in (200, 202):
                            tally.valid_deliveries.add(delivery)
                            tally.commands += 1
                    next_command = now + 90
                roll = rng.random()
                if roll < 0.05:
                    answer = signed_post(
                        client,
                        "issue_comment",
                        f"forged-{uuid.uuid4()}",
                        {"action": "created"},
                        forge_signature=True,
                    )
                    tally.forged += 1
                    tally.forged_accepted += answer.status_code != 401
                elif roll < 0.15 and sent:
                    delivery, payload = rng.choice(sent)
                    began = time.perf_counter()
                    signed_post(client, "issue_comment", delivery, payload).raise_for_status()
                    tally.took("redelivery", time.perf_counter() - began)
                else:
                    delivery = f"d-{uuid.uuid4()}"
                    payload = {
                        "action": "created",
                        "issue": {"number": 1},
                        "comment": {"body": "LGTM", "user": {"login": "dev", "type": "User"}},
                        "sender": {"login": "dev", "type": "User"},
                    }
                    began = time.perf_counter()
                    answer = signed_post(client, "issue_comment", delivery, payload)
                    tally.took("webhook", time.perf_counter() - began)
                    answer.raise_for_status()
                    tally.valid_deliveries.add(delivery)
                    sent.append((delivery, payload))
            except httpx.HTTPError as exc:
                tally.errors.append(f"{type(exc).__name__}: {exc}"[:200])
            time.sleep(0.1)
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
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
        repos = []
        for index in range(args.repos):
            source = root / f"source-{index}"
            head = build_target(source)
            name = f"acme/trt-{index}"
            repo = github.create_repo(name, source)
            repo.permissions["maintainer"] = "write"
            repos.append((name, head))
        failing_console = run_tests(root / "source-0").console
    env = {
        "REPAIRBOT_ENVIRONMENT": "test",
        "REPAIRBOT_DATA_DIR": str(root / "data"),
        # Required outside development: the targets are built in this run's folder.
        "REPAIRBOT_REPOSITORY_ROOTS": f'["{root!s}"]',
        "REPAIRBOT_DATABASE_URL": db_url,
        "REPAIRBOT_BROKER_URL": broker,
        "REPAIRBOT_GITHUB_WEBHOOK_SECRET": SECRET,
        "REPAIRBOT_CI_TOKEN": CI_TOKEN,
        "REPAIRBOT_GITHUB_API_URL": github.url,
        "REPAIRBOT_GITHUB_TOKEN": TOKEN,
        "REPAIRBOT_GITHUB_GIT_URL_TEMPLATE": github.git_url_template,
        "REPAIRBOT_GITHUB_SECONDS_BETWEEN_WRITES": "0",
        "REPAIRBOT_EMBEDDED_WORKER": "false",
        "REPAIRBOT_RECONCILE_INTERVAL_S": "5",
        "REPAIRBOT_STALE_AFTER_S": "120",
        "REPAIRBOT_VERIFY_FALLBACK_AFTER_S": "5",
    }
    port = free_port()
    api = start(
        [str(BIN / "repairbot"), "serve", "--no-worker", "--port", str(port)],
        env,
        root / "api.log",
        f"http://127.0.0.1:{port}/readyz",
    )
    workers = [
        subprocess.Popen(
            [str(BIN / "repairbot"), "worker", "-Q", "repair,cpu", "-n", f"w{i}@%h"],
            env={**os.environ, **env},
            stdout=(root / f"worker{i}.log").open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for i in range(2)
    ]
    tally = Tally()
    seconds = args.minutes * 60
    until = time.monotonic() + seconds
    sender = threading.Thread(
        target=traffic,
        args=(f"http://127.0.0.1:{port}", github, repos, failing_console, tally, until, db_url),
    )
    sender.start()
    faults: list[str] = []
    time.sleep(seconds / 3)
    os.killpg(workers[0].pid, signal.SIGKILL)
    workers[0].wait()
    faults.append(f"{time.strftime('%H:%M:%S')} worker w0 killed with SIGKILL")
    workers[0] = subprocess.Popen(
        [str(BIN / "repairbot"), "worker", "-Q", "repair,cpu", "-n", "w2@%h"],
        env={**os.environ, **env},
        stdout=(root / "worker2.log").open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    time.sleep(seconds / 3)
    redis.kill()
    redis.wait()
    time.sleep(3)
    redis = start_redis(redis_port)
    faults.append(f"{time.strftime('%H:%M:%S')} Redis killed (nothing persisted) and restarted")
    sender.join()
    engine = create_engine(db_url)
    with console.status("draining: waiting for every delivery, report, run and verification"):
        deadline = time.monotonic() + 900
        while True:
            with engine.connect() as connection:
                pending = connection.execute(
                    text(
                        "SELECT (SELECT count(*) FROM deliveries WHERE outcome = 'stored')"
                        " + (SELECT count(*) FROM reports WHERE classified_at IS NULL)"
                        " + (SELECT count(*) FROM repair_runs WHERE state IN"
                        "    ('received','classified','swept','patched','verifying'))"
                        " + (SELECT count(*) FROM verifications"
                        "    WHERE state IN ('queued','running'))"
                    )
                ).scalar_one()
            if pending == 0 or time.monotonic() > deadline:
                break
            time.sleep(2)
    with engine.connect() as connection:
        stored = {
            key.removeprefix("github:")
            for (key,) in connection.execute(
                text("SELECT key FROM deliveries WHERE source = 'github'")
            )
        }
        unprocessed = connection.execute(
            text("SELECT count(*) FROM deliveries WHERE outcome = 'stored'")
        ).scalar_one()
        reports = connection.execute(text("SELECT count(*) FROM reports")).scalar_one()
        unclassified = connection.execute(
            text("SELECT count(*) FROM reports WHERE classified_at IS NULL")
        ).scalar_one()
        live_runs = connection.execute(
            text(
                "SELECT count(*) FROM repair_runs WHERE state IN "
                "('received','classified','swept','patched','verifying')"
            )
        ).scalar_one()
        prs = connection.execute(
            text("SELECT repository, count(*) FROM fixes GROUP BY repository")
        ).all()
        verifications = connection.execute(
            text("SELECT state, count(*) FROM verifications GROUP BY state")
        ).all()
        double_writes = connection.execute(
            text("SELECT count(*) - count(DISTINCT key) FROM github_writes")
        ).scalar_one()
    engine.dispose()
    for process in workers:
        os.killpg(process.pid, signal.SIGTERM)
    stop(api)
    redis.terminate()
    github_server.shutdown()
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
    lost = (
        len(tally.valid_deliveries - stored)
        + unprocessed
        + (len(tally.failures) - reports)
        + unclassified
        + live_runs
    )
    lost += sum(1 for name, _ in repos if name not in {r for r, _ in prs})
    duplicated = sum(count - 1 for _, count in prs if count > 1) + max(0, double_writes)
    console.print(f"ran {args.minutes:.1f} min; faults: " + "; ".join(faults))
    console.print(
        f"deliveries: {len(tally.valid_deliveries)} valid unique sent, {len(stored)} stored, "
        f"{unprocessed} unprocessed; forged {tally.forged}, accepted {tally.forged_accepted}"
    )
    console.print(
        f"failures: {len(tally.failures)} posted, {reports} stored, {unclassified} unclassified; "
        f"runs still live: {live_runs}"
    )
    console.print(
        f"fix PRs per repository: {dict(prs)} (expected 1 each); "
        f"verifications: {dict(verifications)}; "
        f"/bot run commands: {tally.commands}"
    )
    console.print(
        f"[bold]lost: {lost}, duplicated: {duplicated}[/bold]; "
        f"client errors during faults: {len(tally.errors)}"
    )
    for kind, values in sorted(tally.latencies.items()):
        console.print(
            f"  {kind:12} n={len(values):5}  p50 {percentile(values, 0.5) * 1000:7.1f} ms  "
            f"p99 {percentile(values, 0.99) * 1000:7.1f} ms"
        )
    console.print(f"logs: {root}")


if __name__ == "__main__":
    main()
