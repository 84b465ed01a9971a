"""Signed GitHub deliveries per second and latency: repairbot against a bare HMAC-only endpoint.

Run: .venv/bin/python bench/webhooks.py [--requests 2000] [--concurrency 16]

Both servers run under uvicorn in their own process on loopback, driven by the same asyncio
httpx client. repairbot runs the embedded default (SQLite, filesystem broker) without its
worker, so each delivery is verified, deduplicated, stored, committed and enqueued. Phase 1 is
the peak rate of each; phase 2 paces repairbot at half its peak and reads p50/p99. Afterwards the
stored rows are counted: every accepted delivery must be there exactly once.
Targets (issue #5): >= 50% of the bare rate, p99 <= 50 ms at half of peak, nothing lost.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (
    WEBHOOK_SECRET,
    bench_parser,
    percentile_ms,
    serve_command,
    service_env,
    serving,
)
from bench.service import BIN, free_port
from bot.intake.webhook_auth import sign

if TYPE_CHECKING:
    from rich.console import Console

WARM_UP = 50  # deliveries sent before each peak-rate phase


def delivery(index: int, run: str) -> tuple[bytes, dict[str, str]]:
    """A signed issue_comment delivery."""
    body = json.dumps(
        {
            "action": "created",
            "issue": {"number": index % 50, "pull_request": {}},
            "comment": {"body": "/bot run", "user": {"login": f"dev{index % 7}"}},
        }
    ).encode()
    headers = {
        "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": f"{run}-{index}",
        "X-Hub-Signature-256": sign(WEBHOOK_SECRET.encode(), body),
        "Content-Type": "application/json",
    }
    return body, headers


async def blast(
    url: str, count: int, concurrency: int, run: str, rate: float | None = None
) -> list[float]:
    """Send ``count`` deliveries and return their latencies; ``rate`` paces requests per second."""
    latencies: list[float] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(count):
        queue.put_nowait(index)
    start_time = time.perf_counter()
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:

        async def worker() -> None:
            while not queue.empty():
                index = queue.get_nowait()
                if rate:
                    await asyncio.sleep(max(0.0, start_time + index / rate - time.perf_counter()))
                body, headers = delivery(index, run)
                sent = time.perf_counter()
                response = await client.post("/webhooks/github", content=body, headers=headers)
                latencies.append(time.perf_counter() - sent)
                if response.status_code not in (200, 202):
                    raise SystemExit(f"unexpected {response.status_code}: {response.text}")

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies


def measure(url: str, count: int, concurrency: int, run: str) -> float:
    """Peak deliveries per second."""
    asyncio.run(blast(url, WARM_UP, concurrency, f"{run}-warm"))
    began = time.perf_counter()
    asyncio.run(blast(url, count, concurrency, run))
    return count / (time.perf_counter() - began)


@dataclass(frozen=True)
class Figures:
    """What the phases measured: both peak rates and the paced latencies of repairbot."""

    bare_rate: float
    ours_rate: float
    paced: list[float]


def expected_deliveries(requests: int) -> int:
    """Deliveries accepted over the run: the warm-up, the peak phase and the paced phase."""
    return WARM_UP + requests + requests // 2


def run_phases(
    console: Console, bare_url: str, ours_url: str, requests: int, concurrency: int
) -> Figures:
    """Phase 1, the peak rate of each server; phase 2, repairbot paced at half of its peak."""
    with console.status("peak rate: bare endpoint"):
        bare_rate = measure(bare_url, requests, concurrency, "bare")
    with console.status("peak rate: repairbot"):
        ours_rate = measure(ours_url, requests, concurrency, "peak")
    with console.status("repairbot at half of its peak rate"):
        paced = asyncio.run(
            blast(ours_url, requests // 2, concurrency, "paced", rate=ours_rate / 2)
        )
    return Figures(bare_rate, ours_rate, paced)


def stored_deliveries(database: Path) -> int:
    """How many deliveries repairbot's SQLite database holds."""
    with sqlite3.connect(database) as db:
        return int(db.execute("SELECT count(*) FROM deliveries").fetchone()[0])


def print_results(console: Console, figures: Figures, stored: int, expected: int) -> None:
    """The rates, their ratio, the paced latencies and the count of stored rows."""
    bare_rate, ours_rate, paced = figures.bare_rate, figures.ours_rate, figures.paced
    console.print(f"bare HMAC-only endpoint: {bare_rate:8.0f} deliveries/s")
    console.print(f"repairbot (persisted):   {ours_rate:8.0f} deliveries/s")
    console.print(f"ratio to bare: {ours_rate / bare_rate:.2f}x  (target >= 0.50x)")
    console.print(
        f"at half of peak ({ours_rate / 2:.0f}/s): p50 {percentile_ms(paced, 0.5):.1f} ms, "
        f"p99 {percentile_ms(paced, 0.99):.1f} ms  (target p99 <= 50 ms)"
    )
    console.print(f"rows stored: {stored} of {expected} accepted  (lost: {expected - stored})")


def bare_command(port: int) -> list[str]:
    """The bare HMAC-only endpoint (bench/bare_webhook_app.py) under uvicorn on ``port``."""
    app = "bench.bare_webhook_app:app"
    return [str(BIN / "uvicorn"), app, "--port", str(port), "--log-level", "warning"]


def main() -> None:
    """Start both servers, run the phases, count the stored rows and print the figures."""
    parser = bench_parser(__doc__)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    from rich.console import Console

    console = Console()
    with tempfile.TemporaryDirectory(prefix="repairbot-bench-") as tmp:
        data = Path(tmp) / "data"
        env = service_env(
            data, data.parent, REPAIRBOT_EMBEDDED_WORKER="false", BENCH_SECRET=WEBHOOK_SECRET
        )
        bare_port, ours_port = free_port(), free_port()
        bare_log, ours_log = Path(tmp) / "bare.log", Path(tmp) / "ours.log"
        with (
            serving(bare_command(bare_port), bare_port, env, bare_log, "/healthz") as bare_url,
            serving(serve_command(ours_port), ours_port, env, ours_log) as ours_url,
        ):
            figures = run_phases(console, bare_url, ours_url, args.requests, args.concurrency)
        stored = stored_deliveries(data / "repairbot.db")
    print_results(console, figures, stored, expected_deliveries(args.requests))


if __name__ == "__main__":
    main()
