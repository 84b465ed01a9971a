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

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.service import BIN, free_port, percentile, start, stop
from bot.github.signature import sign

SECRET = "bench-webhook-secret-0123456789"


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
        "X-Hub-Signature-256": sign(SECRET.encode(), body),
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
    asyncio.run(blast(url, 50, concurrency, f"{run}-warm"))
    began = time.perf_counter()
    asyncio.run(blast(url, count, concurrency, run))
    return count / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    from rich.console import Console

    console = Console()
    with tempfile.TemporaryDirectory(prefix="repairbot-bench-") as tmp:
        data = Path(tmp) / "data"
        env = {
            "REPAIRBOT_ENVIRONMENT": "test",
            "REPAIRBOT_DATA_DIR": str(data),
            # Required outside development: the targets are built in this run's folder.
            "REPAIRBOT_REPOSITORY_ROOTS": f'["{data.parent!s}"]',
            "REPAIRBOT_GITHUB_WEBHOOK_SECRET": SECRET,
            "REPAIRBOT_CI_TOKEN": "bench-ci-token-0123456789",
            "REPAIRBOT_EMBEDDED_WORKER": "false",
            "BENCH_SECRET": SECRET,
        }
        bare_port, ours_port = free_port(), free_port()
        bare = start(
            [
                str(BIN / "uvicorn"),
                "bench.bare_webhook_app:app",
                "--port",
                str(bare_port),
                "--log-level",
                "warning",
            ],
            env,
            Path(tmp) / "bare.log",
            f"http://127.0.0.1:{bare_port}/healthz",
        )
        ours = start(
            [str(BIN / "repairbot"), "serve", "--port", str(ours_port)],
            env,
            Path(tmp) / "ours.log",
            f"http://127.0.0.1:{ours_port}/readyz",
        )
        try:
            with console.status("peak rate: bare endpoint"):
                bare_rate = measure(
                    f"http://127.0.0.1:{bare_port}", args.requests, args.concurrency, "bare"
                )
            with console.status("peak rate: repairbot"):
                ours_rate = measure(
                    f"http://127.0.0.1:{ours_port}", args.requests, args.concurrency, "peak"
                )
            with console.status("repairbot at half of its peak rate"):
                paced = asyncio.run(
                    blast(
                        f"http://127.0.0.1:{ours_port}",
                        args.requests // 2,
                        args.concurrency,
                        "paced",
                        rate=ours_rate / 2,
                    )
                )
        finally:
            stop(ours)
            stop(bare)
        with sqlite3.connect(data / "repairbot.db") as db:
            stored = db.execute("SELECT count(*) FROM deliveries").fetchone()[0]
    expected = 50 + args.requests + args.requests // 2
    console.print(f"bare HMAC-only endpoint: {bare_rate:8.0f} deliveries/s")
    console.print(f"repairbot (persisted):   {ours_rate:8.0f} deliveries/s")
    console.print(f"ratio to bare: {ours_rate / bare_rate:.2f}x  (target >= 0.50x)")
    console.print(
        f"at half of peak ({ours_rate / 2:.0f}/s): p50 {percentile(paced, 0.5) * 1000:.1f} ms, "
        f"p99 {percentile(paced, 0.99) * 1000:.1f} ms  (target p99 <= 50 ms)"
    )
    console.print(f"rows stored: {stored} of {expected} accepted  (lost: {expected - stored})")


if __name__ == "__main__":
    main()
