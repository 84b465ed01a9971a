"""Abuse, measured (issue 36): the intake's p99 under comment spam with the GitHub write budget
spent, and an unrelated repair's time under a flood of one PR's ``synchronize`` deliveries.

``repairbot serve`` (SQLite, embedded worker) talks to the GitHub test double
(tests/fakes/github_api.py). Every load comes from wrk (bench/wrk/post.lua), never a Python loop.

1. **Spam.** CI posts at a steady pace (wrk, paced) alone, then again while a second wrk sends a
   stranger's ``/repairbot help`` comments as fast as the server takes them, with
   ``REPAIRBOT_GITHUB_WRITES_PER_MINUTE=1`` (the budget is spent after the first reply). Printed:
   the CI posts' p99 with spam ÷ without (target: unchanged, ≤ 1.5x on this 2-core machine where
   the spam's own processing shares the CPU), every answer 2xx, and how many replies the
   stranger got (target: 1).
2. **Flood.** The time from an unrelated repository's CI failure to its fix PR, alone (warm,
   best of two), then right after N ``synchronize`` deliveries for one head of another PR were
   accepted. Printed: the ratio (target ≤ 1.5x: the flood's deliveries are stored, and while
   the first waits the rest are coalesced, so they queue no work), how the deliveries were
   stored, and the GitHub REST calls the flood cost (target: one check's, a handful).

    python bench/abuse.py [--seconds 15] [--flood 2000]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script, from anywhere

from bench.harness import (
    CI_TOKEN,
    WEBHOOK_SECRET,
    bench_parser,
    serve_command,
    service_env,
    serving,
)
from bench.load import Load, LoadResult, run_wrk
from bench.service import free_port
from bench.soak import start_github
from bot.cli.demo_target import build_target, run_tests
from bot.intake.webhook_auth import sign
from tests.fakes.github_api import TOKEN, FakeGitHub
from tests.fakes.github_git import git_out

SPAMMED = "acme/spammed"
REPAIRED = "acme/repaired"
CI_PACE_MS = 50.0  # per connection: 4 connections, about 80 CI posts a second


def _signed_load(folder: Path, event: str, payload: dict[str, Any]) -> Load:
    body = json.dumps(payload).encode()
    path = folder / f"{event}-{uuid.uuid4().hex[:6]}.json"
    path.write_bytes(body)
    headers = {
        "X-GitHub-Event": event,
        "Content-Type": "application/json",
        "X-Hub-Signature-256": sign(WEBHOOK_SECRET.encode(), body),
    }
    return Load("/webhooks/github", path, headers, "X-GitHub-Delivery")


def _ci_load(folder: Path) -> Load:
    path = folder / "ci.log"
    path.write_bytes(b"collected 3 items\n3 passed in 0.01s\n")
    query = "/api/v1/ci-failures?pipeline=nightly&repository=acme%2Fother&format=console"
    headers = {"Authorization": f"Bearer {CI_TOKEN}", "Content-Type": "text/plain"}
    return Load(query, path, headers, "Idempotency-Key")


def _ci(url: str, load: Load, run: str, seconds: float) -> LoadResult:
    return run_wrk(url, load, run, connections=4, seconds=seconds, mean_delay_ms=CI_PACE_MS)


def _with_spam(url: str, ci: Load, spam: Load, seconds: float) -> tuple[LoadResult, LoadResult]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        spammed = pool.submit(run_wrk, url, spam, "spam", connections=8, seconds=seconds)
        paced = pool.submit(_ci, url, ci, "ci-spam", seconds)
        return paced.result(), spammed.result()


def _repair_seconds(url: str, console: bytes, head: str, build: int) -> float:
    """Failure posted → its run's PR recorded (the unrelated repair)."""
    began = time.perf_counter()
    answer = httpx.post(
        f"{url}/api/v1/ci-failures",
        params={"pipeline": "L0", "build_number": build, "repository": REPAIRED,
                "head_sha": head, "base_ref": "main"},
        content=console,
        headers={"Authorization": f"Bearer {CI_TOKEN}"},
        timeout=60,
    )  # fmt: skip
    answer.raise_for_status()
    report_url = f"{url}{answer.json()['url']}"
    while True:
        runs = httpx.get(report_url, timeout=30).json()["runs"]
        if runs and all(run["state"] not in ("received", "classified", "swept", "patched")
                        for run in runs):  # fmt: skip
            return time.perf_counter() - began
        time.sleep(0.05)


def _stored(db: str) -> int:
    engine = create_engine(db)
    with engine.connect() as connection:
        found = int(connection.execute(text(
            "SELECT count(*) FROM deliveries WHERE source = 'github' AND outcome = 'stored'"
        )).scalar_one())  # fmt: skip
    engine.dispose()
    return found


def _wait_processed(db: str, limit_s: float = 600) -> float:
    began = time.perf_counter()
    while _stored(db) and time.perf_counter() - began < limit_s:
        time.sleep(0.2)
    return time.perf_counter() - began


def _setup(github: FakeGitHub, root: Path) -> tuple[int, str, bytes, str]:
    spammed = root / "spammed"
    head = build_target(spammed)
    repo = github.create_repo(SPAMMED, spammed)
    git_out(repo.path, "branch", "feature", head)
    number = github.open_pull(SPAMMED, head="feature", title="[None][feat] f", login="alice")
    repaired = root / "repaired"
    repaired_head = build_target(repaired)
    github.create_repo(REPAIRED, repaired)
    return number, head, run_tests(repaired).console, repaired_head


def main() -> None:
    """Run both measurements and print their figures."""
    parser = bench_parser(__doc__)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--flood", type=int, default=2000)
    args = parser.parse_args()
    console = Console(emoji=False)
    root = Path(tempfile.mkdtemp(prefix="repairbot-abuse-"))
    github, server = start_github(root / "github")
    number, head, repair_log, repaired_head = _setup(github, root)
    data = root / "data"
    env = service_env(
        data, root, REPAIRBOT_GITHUB_API_URL=github.url, REPAIRBOT_GITHUB_TOKEN=TOKEN,
        REPAIRBOT_GITHUB_GIT_URL_TEMPLATE=github.git_url_template,
        REPAIRBOT_GITHUB_SECONDS_BETWEEN_WRITES="0", REPAIRBOT_GITHUB_WRITES_PER_MINUTE="1",
        REPAIRBOT_IMPORT_SPARES="0",
    )  # fmt: skip
    db = f"sqlite:///{data / 'repairbot.db'}"
    port = free_port()
    comment = github.comment_event(SPAMMED, number, "/repairbot help", login="mallory")
    spam = _signed_load(root, "issue_comment", comment)
    ci = _ci_load(root)
    with serving(serve_command(port), port, env, root / "api.log") as url:
        alone = _ci(url, ci, "ci-alone", args.seconds)
        paced, spammed = _with_spam(url, ci, spam, args.seconds)
        drained = _wait_processed(db)
        replies = sum(1 for c in github.repos[SPAMMED].comments.get(number, [])
                      if c["user"]["login"].endswith("[bot]"))  # fmt: skip
        console.print(
            f"[bold]spam[/]: CI posts p99 alone {alone.p99_ms:.1f} ms ({alone.rate:.0f}/s), with "
            f"{spammed.rate:.0f} spam deliveries/s {paced.p99_ms:.1f} ms ({paced.rate:.0f}/s): "
            f"[bold]{paced.p99_ms / alone.p99_ms:.2f}x[/] (target ≤ 1.5x); refused "
            f"{alone.refused + paced.refused + spammed.refused}, wrk CPU "
            f"{spammed.client_cpu:.2f}+{paced.client_cpu:.2f} cores; {spammed.accepted} spam "
            f"deliveries processed {drained:.0f} s after; replies to the stranger: {replies}"
        )
        _flood(console, url, db, github, args.flood, number, head, repair_log, repaired_head)
    server.shutdown()


def _flood(
    console: Console, url: str, db: str, github: FakeGitHub, size: int, number: int,
    head: str, repair_log: bytes, repaired_head: str,
) -> None:  # fmt: skip
    _repair_seconds(url, repair_log, repaired_head, 1)  # warm-up: mirror, caches, sandbox
    alone = min(_repair_seconds(url, repair_log, repaired_head, build) for build in (2, 3))
    payload = github.pull_request_event(SPAMMED, number, "synchronize")
    flood = _signed_load(Path(tempfile.mkdtemp()), "pull_request", payload)
    calls = len(github.calls)
    seconds = max(1.0, size / 400)
    sent = run_wrk(url, flood, "flood", connections=8, seconds=seconds, threads=1)
    after = _repair_seconds(url, repair_log, repaired_head, 4)
    drained = _wait_processed(db)
    rest = sum(1 for call in github.calls[calls:] if f"/repos/{SPAMMED}/" in call.path)
    console.print(
        f"[bold]flood[/]: {sent.accepted} synchronize deliveries for one head accepted in "
        f"{seconds:.0f} s ({_outcomes(db)}); an unrelated failure → PR alone {alone:.2f} s "
        f"(best of 2, warm), right after the flood {after:.2f} s: [bold]{after / alone:.2f}x[/] "
        f"(target ≤ 1.5x); the flood drained {drained:.1f} s after that; REST calls about the "
        f"flooded PR's repository: {rest}"
    )


def _outcomes(db: str) -> str:
    engine = create_engine(db)
    with engine.connect() as connection:
        rows = connection.execute(text(
            "SELECT outcome, count(*) FROM deliveries WHERE event = 'pull_request' GROUP BY 1"
        )).all()  # fmt: skip
    engine.dispose()
    return ", ".join(f"{count} {outcome}" for outcome, count in sorted(rows))


if __name__ == "__main__":
    main()
