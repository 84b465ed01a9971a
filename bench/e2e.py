"""Failure POST → PR recorded on the embedded default (SQLite, file broker, in-process worker).

Run: .venv/bin/python bench/e2e.py [--repairs 8]

Each repair gets its own copy of the legacy target repository (a new repository means a new
root cause, so no run is a duplicate). The baseline, measured in the same run on another copy,
is the same repair done directly in one process: sweep + fix (with its import evidence in the
sandbox) + git commit, no HTTP, no queue, no database. The ratio says what the service adds (or,
below 1, what it saves: its import check's sandbox is started ahead of the attempt). The service
run is broken down per stage from each run's timeline (the stages' seconds that the repair stage
records there, and the transitions' times). Target: p50 <= 1.5 s.
"""

from __future__ import annotations

import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import CI_TOKEN, bench_parser, serve_command, service_env, serving
from bench.service import free_port, percentile
from bot.cli.demo_target import build_target, post_failure, run_tests, wait_for_runs
from bot.git import commit_all
from bot.pipeline.repair.stage_times import parse_stage_seconds
from fixers.contracts.model import SPEC_WORKER_CONTRACT
from fixers.sweep.run import fix, write_changes

if TYPE_CHECKING:
    from rich.console import Console

BASELINE_COPIES = 3  # the baseline is the median of this many direct repairs
TARGET_P50_S = 1.5
Stages = dict[str, float]


def direct_repair(repo: Path) -> tuple[float, Stages]:
    """The baseline: the same repair without the service; its seconds, in all and per stage."""
    began = time.perf_counter()
    result = fix(repo, [SPEC_WORKER_CONTRACT], imports=True)
    clock = time.perf_counter()
    write_changes(repo, result)
    commit_all(repo, "direct fix")
    stages = {**result.seconds, "write + commit": time.perf_counter() - clock}
    return time.perf_counter() - began, stages


def build_targets(root: Path, count: int, console: Console) -> tuple[list[tuple[Path, str]], bytes]:
    """``count`` target repositories ``(path, head SHA)`` under ``root`` and a failing CI log."""
    with console.status("building targets and running their failing tests"):
        targets = []
        for index in range(count):
            repo = root / f"target-{index}"
            targets.append((repo, build_target(repo)))
        console_log = run_tests(targets[0][0]).console
    return targets, console_log


def baseline_seconds(targets: list[tuple[Path, str]]) -> tuple[float, list[Stages]]:
    """The median time of a direct repair of each of ``targets``, and each one's stages."""
    repairs = [direct_repair(repo) for repo, _ in targets]
    return sorted(seconds for seconds, _ in repairs)[len(repairs) // 2], [s for _, s in repairs]


def _moment(text: str) -> float:
    """A timestamp of the service's (ISO 8601; SQLite's come back naive, stored as UTC)."""
    moment = datetime.fromisoformat(text)
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def service_stages(report: dict[str, Any], posted: float, seen: float) -> Stages:
    """Where one repair's time went, from its report: the transitions' times (wall clock, the
    same host's) and the stages' seconds recorded in their reasons; ``posted`` and ``seen`` are
    the bench's own wall-clock times of the POST and of seeing the PR recorded."""
    run = report["runs"][0]
    at = {t["to"]: _moment(t["at"]) for t in run["transitions"]}
    noted = {t["to"]: parse_stage_seconds(t["reason"] or "") for t in run["transitions"]}
    received = _moment(report["received_at"])
    swept, published = noted.get("swept", {}), noted.get("pr_opened", {})
    return {
        "POST → stored": received - posted,
        "triage (queue wait + classify)": at["classified"] - received,
        "repair queue wait + attempt start": at["swept"] - at["classified"] - sum(swept.values()),
        **swept,
        "write": at["patched"] - at["swept"],
        **published,
        "record (database)": at["pr_opened"] - at["patched"] - sum(published.values()),
        "bench sees it (poll)": seen - at["pr_opened"],
    }


def timed_repairs(
    url: str, targets: list[tuple[Path, str]], console_log: bytes, console: Console
) -> tuple[list[float], list[Stages]]:
    """Post one failure per target to the service at ``url``; seconds until each PR is recorded,
    and each repair's stages."""
    from rich.progress import Progress

    durations: list[float] = []
    stages: list[Stages] = []
    with httpx.Client(base_url=url, timeout=30) as client, Progress(console=console) as bar:
        task = bar.add_task("repairs", total=len(targets))
        for index, (repo, head) in enumerate(targets):
            began, posted = time.perf_counter(), time.time()
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
            stages.append(service_stages(report, posted, time.time()))
            bar.advance(task)
    return durations, stages


def print_stages(console: Console, title: str, stages: list[Stages]) -> None:
    """A table of each stage's p50 and max seconds over ``stages`` (one dict per repair)."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in ("stage", "p50 s", "max s"):
        table.add_column(column, justify="left" if column == "stage" else "right")
    names = list(dict.fromkeys(name for repair in stages for name in repair))
    for name in names:
        values = [repair.get(name, 0.0) for repair in stages]
        table.add_row(name, f"{percentile(values, 0.5):.3f}", f"{max(values):.3f}")
    console.print(table)


def print_results(
    console: Console,
    baseline: tuple[float, list[Stages]],
    durations: list[float],
    stages: list[Stages],
) -> None:
    """The figures: each run's stages, the baseline, the service's p50 and max, their ratio."""
    seconds, direct = baseline
    print_stages(console, "direct repair (baseline), per stage", direct)
    print_stages(console, "through the service, per stage", stages)
    p50 = percentile(durations, 0.5)
    console.print(f"direct repair, no service (baseline): {seconds:.2f} s", soft_wrap=True)
    console.print(
        f"failure POST → PR recorded: p50 {p50:.2f} s, max {max(durations):.2f} s "
        f"over {len(durations)} repairs  (target p50 <= {TARGET_P50_S} s)",
        soft_wrap=True,
    )
    console.print(f"ratio to the direct repair: {p50 / seconds:.2f}x", soft_wrap=True)


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
            durations, stages = timed_repairs(url, targets[: args.repairs], console_log, console)
    print_results(console, baseline, durations, stages)


if __name__ == "__main__":
    main()
