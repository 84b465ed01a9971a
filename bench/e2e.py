"""Failure POST → PR recorded on the embedded default (SQLite, file broker, in-process worker).

Run: .venv/bin/python bench/e2e.py [--repairs 8]

Each repair gets its own copy of the legacy target repository (a new repository means a new
root cause, so no run is a duplicate). The baseline, measured in the same run on another copy,
is the same repair done directly in one process: sweep + fix + git commit, no HTTP, no queue, no
database. The ratio says what the service adds. Target (issue #5): p50 <= 3 s.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.service import BIN, free_port, percentile, start, stop
from bot.demo import build_target, post_failure, run_tests, wait_for_runs
from bot.forge.git import commit_all
from fixers.contracts import SPEC_WORKER_CONTRACT
from fixers.sweep import fix, write_changes

TOKEN = "bench-ci-token-0123456789"


def direct_repair(repo: Path) -> float:
    """The baseline: the same repair without the service."""
    began = time.perf_counter()
    result = fix(repo, [SPEC_WORKER_CONTRACT], imports=True)
    write_changes(repo, result)
    commit_all(repo, "direct fix")
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repairs", type=int, default=8)
    args = parser.parse_args()
    from rich.console import Console
    from rich.progress import Progress

    console = Console()
    with tempfile.TemporaryDirectory(prefix="repairbot-bench-") as tmp:
        root = Path(tmp)
        with console.status("building targets and running their failing tests"):
            targets = []
            for index in range(args.repairs + 3):
                repo = root / f"target-{index}"
                targets.append((repo, build_target(repo)))
            console_log = run_tests(targets[0][0]).console
        baseline = sorted(direct_repair(repo) for repo, _ in targets[-3:])[1]
        port = free_port()
        env = {
            "REPAIRBOT_ENVIRONMENT": "test",
            "REPAIRBOT_DATA_DIR": str(root / "data"),
            # Required outside development: the targets are built in this run's folder.
            "REPAIRBOT_REPOSITORY_ROOTS": f'["{root!s}"]',
            "REPAIRBOT_GITHUB_WEBHOOK_SECRET": "bench-webhook-secret-0123456789",
            "REPAIRBOT_CI_TOKEN": TOKEN,
        }
        server = start(
            [str(BIN / "repairbot"), "serve", "--port", str(port)],
            env,
            root / "serve.log",
            f"http://127.0.0.1:{port}/readyz",
        )
        durations: list[float] = []
        try:
            with (
                httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client,
                Progress(console=console) as bar,
            ):
                task = bar.add_task("repairs", total=args.repairs)
                for index, (repo, head) in enumerate(targets[: args.repairs]):
                    began = time.perf_counter()
                    answer = post_failure(
                        client,
                        token=TOKEN,
                        repo=repo,
                        head_sha=head,
                        console=console_log,
                        build_number=index,
                    )
                    report = wait_for_runs(client, answer["url"], timeout_s=300)
                    durations.append(time.perf_counter() - began)
                    states = [run["state"] for run in report["runs"]]
                    if states != ["pr_opened"]:
                        raise SystemExit(f"repair {index} ended {states}")
                    bar.advance(task)
        finally:
            stop(server)
    p50 = percentile(durations, 0.5)
    console.print(f"direct repair, no service (baseline): {baseline:.2f} s")
    console.print(
        f"failure POST → PR recorded: p50 {p50:.2f} s, max {max(durations):.2f} s "
        f"over {len(durations)} repairs  (target p50 <= 3 s)"
    )
    console.print(f"ratio to the direct repair: {p50 / baseline:.2f}x")


if __name__ == "__main__":
    main()
