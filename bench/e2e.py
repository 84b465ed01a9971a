"""Failure POST → PR recorded on the embedded default (SQLite, file broker, in-process worker).

Run: .venv/bin/python bench/e2e.py [--repairs 8]

Each repair gets its own copy of the legacy target repository (a new repository means a new
root cause, so no run is a duplicate). The baseline, measured in the same run on another copy,
is the same repair done directly in one process: sweep + fix + git commit, no HTTP, no queue, no
database. The ratio says what the service adds. Target (issue #5): p50 <= 3 s.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import CI_TOKEN, bench_parser, serve_command, service_env, serving
from bench.service import free_port, percentile
from bot.cli.demo_target import build_target, post_failure, run_tests, wait_for_runs
from bot.git import commit_all
from fixers.contracts import SPEC_WORKER_CONTRACT
from fixers.sweep import fix, write_changes

if TYPE_CHECKING:
    from rich.console import Console

BASELINE_COPIES = 3  # the baseline is the median of this many direct repairs


def direct_repair(repo: Path) -> float:
    """The baseline: the same repair without the service."""
    began = time.perf_counter()
    result = fix(repo, [SPEC_WORKER_CONTRACT], imports=True)
    write_changes(repo, result)
    commit_all(repo, "direct fix")
    return time.perf_counter() - began


def build_targets(root: Path, count: int, console: Console) -> tuple[list[tuple[Path, str]], bytes]:
    """``count`` target repositories ``(path, head SHA)`` under ``root`` and a failing CI log."""
    with console.status("building targets and running their failing tests"):
        targets = []
        for index in range(count):
            repo = root / f"target-{index}"
            targets.append((repo, build_target(repo)))
        console_log = run_tests(targets[0][0]).console
    return targets, console_log


def baseline_seconds(targets: list[tuple[Path, str]]) -> float:
    """The median time of a direct repair of each of ``targets``."""
    return sorted(direct_repair(repo) for repo, _ in targets)[len(targets) // 2]


def timed_repairs(
    url: str, targets: list[tuple[Path, str]], console_log: bytes, console: Console
) -> list[float]:
    """Post one failure per target to the service at ``url``; seconds until each PR is recorded."""
    from rich.progress import Progress

    durations: list[float] = []
    with httpx.Client(base_url=url, timeout=30) as client, Progress(console=console) as bar:
        task = bar.add_task("repairs", total=len(targets))
        for index, (repo, head) in enumerate(targets):
            began = time.perf_counter()
            answer = post_failure(
                client,
                token=CI_TOKEN,
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
    return durations


def print_results(console: Console, baseline: float, durations: list[float]) -> None:
    """The figures: the baseline, the service's p50 and max, and their ratio."""
    p50 = percentile(durations, 0.5)
    console.print(f"direct repair, no service (baseline): {baseline:.2f} s")
    console.print(
        f"failure POST → PR recorded: p50 {p50:.2f} s, max {max(durations):.2f} s "
        f"over {len(durations)} repairs  (target p50 <= 3 s)"
    )
    console.print(f"ratio to the direct repair: {p50 / baseline:.2f}x")


def main() -> None:
    """Measure the repairs through the service and directly, then print both and the ratio."""
    parser = bench_parser(__doc__)
    parser.add_argument("--repairs", type=int, default=8)
    args = parser.parse_args()
    from rich.console import Console

    console = Console()
    with tempfile.TemporaryDirectory(prefix="repairbot-bench-") as tmp:
        root = Path(tmp)
        targets, console_log = build_targets(root, args.repairs + BASELINE_COPIES, console)
        baseline = baseline_seconds(targets[-BASELINE_COPIES:])
        port = free_port()
        env = service_env(root / "data", root)
        with serving(serve_command(port), port, env, root / "serve.log") as url:
            durations = timed_repairs(url, targets[: args.repairs], console_log, console)
    print_results(console, baseline, durations)


if __name__ == "__main__":
    main()
