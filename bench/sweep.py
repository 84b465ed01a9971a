"""Benchmark: sweep of a large real tree vs ``grep -r`` and vs LibCST-parsing every file.

One run builds the tree (the installed torch package's .py files plus a planted 20-file
SpecWorkerBase hierarchy), then measures, in the same run:

* ``grep -r SpecWorkerBase`` over the tree (baseline 1),
* a full sweep with an empty cache, and where its time goes (the steps of ``run_sweep`` and,
  inside them, the time spent reading, searching, hashing, parsing and extracting facts),
* a re-sweep after a one-file change (warm cache),
* LibCST-parsing every file (baseline 2),
* the pre-merge contract check of a PR adding a violating worker (the tree made a git
  repository): cold (an empty cache) and warm (the same cache, after a one-file push to the PR),
* the scaling curve (``bench/sweep_scaling.py``): for each scale k of ``--scales`` (default 1),
  the tree plus k - 1 copies of torch's files as other top-level packages, swept in a child
  process: time, peak RSS and the ratio to ``grep -r`` over the same tree. ``--scales 1,5,20``
  shows the growth; ``--scaling-only`` measures only that.

and prints the ratios against the targets: full sweep <= 8x grep, >= 200x faster than
parse-everything, re-sweep <= 5x grep, a warm PR check under 1 s. Each timing is the best of
``--repeat`` runs (the parse-everything baseline runs once). Usage:
``python bench/sweep.py [--repeat N] [--keep DIR] [--pr-check-only | --scaling-only]
[--scales 1,5,20]``.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
import torch
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.pr_check import PrCheckTimings, pr_check_rows, time_pr_check
from bench.sweep_scaling import measure_scales, parse_scales, scaling_table
from fixers.sweep.index import IndexCache
from fixers.sweep.run import run_sweep

PLANTED_FILES = 20
FULL_TARGET = 8.0  # full sweep <= 8x grep
PARSE_TARGET = 200.0  # >= 200x faster than LibCST-parsing every file
RESWEEP_TARGET = 5.0  # re-sweep <= 5x grep


def plant(root: Path) -> list[Path]:
    """A 20-file hierarchy: base, re-export, chains across modules, test doubles."""
    pkg = root / "_rb_bench"
    (pkg / "tests").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .base import SpecWorkerBase\n")
    (pkg / "base.py").write_text(
        "class SpecWorkerBase:\n    def forward(self, *a, **k):\n"
        "        return self._forward_impl(*a, **k)\n"
    )
    paths = []
    for i in range(PLANTED_FILES - 3):
        parent = "SpecWorkerBase" if i % 4 == 0 else f"BenchDraftWorker{i - 1}"
        source = "torch._rb_bench" if i % 4 == 0 else f"torch._rb_bench.worker{i - 1}"
        body = "    def forward(self, x):\n        return x\n" if i % 2 else "    n = 1\n"
        path = pkg / f"worker{i}.py"
        path.write_text(
            f"from {source} import {parent}\n\n\nclass BenchDraftWorker{i}({parent}):\n{body}"
        )
        paths.append(path)
    (pkg / "tests" / "test_double.py").write_text(
        "from torch._rb_bench import SpecWorkerBase\n\n\nclass _Worker(SpecWorkerBase):\n"
        "    max_draft_len = 1\n"
    )
    return paths


def best(
    repeat: int, run: Callable[[], object], before: Callable[[], object] | None = None
) -> float:
    """The shortest of ``repeat`` timed calls of ``run``, each after an untimed ``before``."""
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


@dataclass(frozen=True)
class Phases:
    """Where the best full sweep's time went: ``run_sweep``'s steps, and the time spent on
    files inside them (``IndexStats.seconds``)."""

    total: float
    steps: dict[str, float]
    work: dict[str, float]

    def rows(self) -> list[tuple[str, float]]:
        """(phase, seconds), each second counted once; the passes' own work is what the
        contract and hierarchy steps took beyond the file work inside them."""
        work = {name: self.work.get(name, 0.0) for name in ("read", "search", "hash", "parse")}
        work["facts"] = self.work.get("facts", 0.0)
        passes = self.steps["contracts"] + self.steps["hierarchies"] - sum(work.values())
        rows = [
            ("list files (walk, module names, symlink checks)", self.steps["list files"]),
            ("read files (open, fstat, where it landed, read)", work["read"]),
            ("search names in the bytes", work["search"]),
            ("hash parsed files", work["hash"]),
            ("parse (ast) of the files that can matter", work["parse"]),
            ("module facts and contract inference from the ast", work["facts"]),
            ("passes: per-file lookups, hierarchies, resolution", passes),
            ("violations (state-flow model)", self.steps["violations"]),
        ]
        rows.append(("other (config, report)", self.total - sum(sec for _, sec in rows)))
        return rows


@dataclass(frozen=True)
class Timings:
    """Seconds of each measure, all on the same tree in the same run."""

    grep: float
    full: float
    resweep: float
    parse_all: float
    pr_check: PrCheckTimings | None = None


def copy_torch(root: Path, console: Console) -> None:
    """Copy the installed torch package's .py files to ``root``."""
    source = Path(torch.__file__).parent
    files = [p for p in source.rglob("*.py") if "__pycache__" not in p.parts]
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("copying torch .py files", total=len(files))
        for path in files:
            target = root / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            progress.advance(task)


def time_grep(root: Path, repeat: int) -> float:
    """``grep -r -l SpecWorkerBase`` over the tree, with the page cache warmed first."""
    grep = ["grep", "-r", "-l", "SpecWorkerBase", str(root)]
    subprocess.run(grep, capture_output=True, check=False)  # warm the page cache
    return best(repeat, lambda: subprocess.run(grep, capture_output=True, check=False))


def time_full_sweep(root: Path, repeat: int) -> Phases:
    """A sweep with an empty cache, after checking that it finds the planted violations; the
    best of ``repeat`` runs, with its phases."""
    found = run_sweep(root).report
    renames = [v for v in found.violations if v.fix == "rename"]
    stubs = [v for v in found.violations if v.fix == "stub"]
    assert (len(renames), len(stubs)) == (8, 1), found.violations
    best: Phases | None = None
    for _ in range(repeat):
        start = time.perf_counter()
        state = run_sweep(root, cache=IndexCache())
        seconds = time.perf_counter() - start
        if best is None or seconds < best.total:
            best = Phases(seconds, state.seconds, dict(state.index.stats.seconds))
    assert best is not None
    return best


def phases_table(phases: Phases) -> Table:
    """The best full sweep's time, phase by phase."""
    table = Table(title=f"full sweep, empty cache: {phases.total:.3f} s")
    for column in ("phase", "seconds", "share"):
        table.add_column(column)
    for name, seconds in phases.rows():
        table.add_row(name, f"{seconds:.3f}", f"{seconds / phases.total:.0%}")
    return table


def time_resweep(root: Path, changed: Path, repeat: int) -> tuple[float, int]:
    """A re-sweep with a warm cache after each change of ``changed``; also the files it read."""
    cache = IndexCache()
    run_sweep(root, cache=cache)
    counter = iter(range(10**6))

    def touch() -> None:
        with changed.open("a") as handle:
            handle.write(f"# edit {next(counter)}\n")

    reads: list[int] = []
    seconds = best(
        repeat,
        lambda: reads.append(run_sweep(root, cache=cache).index.stats.read),
        before=touch,
    )
    return seconds, reads[-1]


def time_parse_all(files: list[Path], console: Console) -> float:
    """LibCST-parsing every one of ``files`` once (baseline 2)."""
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("LibCST-parsing every file (baseline)", total=len(files))
        start = time.perf_counter()
        for path in files:
            with contextlib.suppress(Exception):  # a file LibCST rejects still cost its time
                cst.parse_module(path.read_bytes())
            progress.advance(task)
        return time.perf_counter() - start


def _verdict(met: bool | str) -> str:
    return met if isinstance(met, str) else ("met" if met else "not met")


def results_table(t: Timings) -> Table:
    """Each measure against its target."""
    table = Table(title="repairbot sweep benchmark (same run, same tree)")
    for column in ("measure", "seconds", "ratio", "target", "met"):
        table.add_column(column)
    full, faster, resweep = t.full / t.grep, t.parse_all / t.full, t.resweep / t.grep
    rows: list[tuple[str, float, str, str, bool | str]] = [
        ("grep -r (baseline)", t.grep, "1x", "", ""),
        (
            "full sweep / grep",
            t.full,
            f"{full:.1f}x",
            f"<= {FULL_TARGET:.0f}x",
            full <= FULL_TARGET,
        ),
        (
            "parse-all / full sweep",
            t.parse_all,
            f"{faster:.0f}x faster",
            f">= {PARSE_TARGET:.0f}x",
            faster >= PARSE_TARGET,
        ),
        (
            "re-sweep / grep",
            t.resweep,
            f"{resweep:.1f}x",
            f"<= {RESWEEP_TARGET:.0f}x",
            resweep <= RESWEEP_TARGET,
        ),
    ]
    if t.pr_check is not None:
        rows.extend(pr_check_rows(t.pr_check))
    for name, seconds, ratio, target, met in rows:
        table.add_row(name, f"{seconds:.3f}", ratio, target, _verdict(met))
    return table


def main() -> None:
    """Build the tree, time each measure and print them with their ratios and targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, default=None, help="build the tree here and keep it")
    only = parser.add_mutually_exclusive_group()
    only.add_argument(
        "--pr-check-only", action="store_true", help="time only the PR check (cold and warm)"
    )
    only.add_argument("--scaling-only", action="store_true", help="measure only --scales")
    parser.add_argument(
        "--scales",
        type=parse_scales,
        default=[1],
        help="sizes of the scaling curve, in copies of the torch tree (default 1; e.g. 1,5,20)",
    )
    args = parser.parse_args()
    console = Console()
    work = args.keep or Path(tempfile.mkdtemp(prefix="rb-bench-"))
    root = work / "torch"
    copy_torch(root, console)
    planted = plant(root)
    all_files = sorted(root.rglob("*.py"))
    size = sum(p.stat().st_size for p in all_files)
    console.print(
        f"tree: {len(all_files)} files, {size / 1e6:.1f} MB, {PLANTED_FILES} planted files"
    )
    if args.pr_check_only:
        pr = time_pr_check(root, args.repeat)
        console.print(
            f"PR check: cold {pr.cold:.3f} s, warm {pr.warm:.3f} s "
            f"({pr.cold / pr.warm:.1f}x faster; target: warm < 1 s)"
        )
    elif args.scaling_only:
        rows = measure_scales(root, root.parent / "scaled", args.scales, args.repeat, time_grep)
        console.print(scaling_table(rows))
    else:
        measure_all(root, planted, all_files, args, console)
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


def measure_all(
    root: Path,
    planted: list[Path],
    all_files: list[Path],
    args: argparse.Namespace,
    console: Console,
) -> None:
    """Every measure, printed as it is taken, then the tables."""
    repeat = args.repeat
    t_grep = time_grep(root, repeat)
    console.print(f"grep -r: {t_grep:.3f} s")
    phases = time_full_sweep(root, repeat)
    t_full = phases.total
    console.print(f"full sweep: {t_full:.3f} s ({t_full / t_grep:.1f}x grep)")
    t_resweep, reread = time_resweep(root, planted[3], repeat)
    console.print(f"re-sweep: {t_resweep:.3f} s ({t_resweep / t_grep:.1f}x grep)")
    t_parse_all = time_parse_all(all_files, console)
    console.print(f"LibCST parse of every file: {t_parse_all:.1f} s")
    rows = measure_scales(root, root.parent / "scaled", args.scales, repeat, time_grep)
    pr = time_pr_check(root, repeat)  # last: it commits the tree and adds a violating worker
    console.print(f"PR check: cold {pr.cold:.3f} s, warm {pr.warm:.3f} s")
    console.print(phases_table(phases))
    console.print(results_table(Timings(t_grep, t_full, t_resweep, t_parse_all, pr)))
    console.print(f"re-sweep read {reread} file(s) after a one-file change")
    console.print(scaling_table(rows))


if __name__ == "__main__":
    main()
