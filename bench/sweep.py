"""Benchmark: sweep of a large real tree vs ``grep -r`` and vs LibCST-parsing every file.

One run builds the tree (the installed torch package's .py files plus a planted 20-file
SpecWorkerBase hierarchy), then measures, in the same run:

* ``grep -r SpecWorkerBase`` over the tree (baseline 1),
* a full sweep with an empty cache,
* a re-sweep after a one-file change (warm cache),
* LibCST-parsing every file (baseline 2),
* the pre-merge contract check of a PR adding a violating worker (the tree made a git
  repository): cold (an empty cache) and warm (the same cache, after a one-file push to the PR),

and prints the ratios against the targets: full sweep <= 20x grep, >= 50x faster than
parse-everything, re-sweep <= 5x grep, a warm PR check under 1 s. Each timing is the best of
``--repeat`` runs (the parse-everything baseline runs once). Usage:
``python bench/sweep.py [--repeat N] [--keep DIR] [--pr-check-only]``.
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
from fixers.sweep.index import IndexCache
from fixers.sweep.run import run_sweep

PLANTED_FILES = 20


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


def time_full_sweep(root: Path, repeat: int) -> float:
    """A sweep with an empty cache, after checking that it finds the planted violations."""
    found = run_sweep(root).report
    renames = [v for v in found.violations if v.fix == "rename"]
    stubs = [v for v in found.violations if v.fix == "stub"]
    assert (len(renames), len(stubs)) == (8, 1), found.violations
    return best(repeat, lambda: run_sweep(root, cache=IndexCache()))


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


def results_table(t: Timings) -> Table:
    """Each measure against its target."""
    table = Table(title="repairbot sweep benchmark (same run, same tree)")
    for column in ("measure", "seconds", "ratio", "target", "met"):
        table.add_column(column)
    rows = [
        ("grep -r (baseline)", t.grep, "1x", "", ""),
        ("full sweep / grep", t.full, f"{t.full / t.grep:.1f}x", "<= 20x", t.full / t.grep <= 20),
        (
            "parse-all / full sweep",
            t.parse_all,
            f"{t.parse_all / t.full:.0f}x faster",
            ">= 50x",
            t.parse_all / t.full >= 50,
        ),
        (
            "re-sweep / grep",
            t.resweep,
            f"{t.resweep / t.grep:.1f}x",
            "<= 5x",
            t.resweep / t.grep <= 5,
        ),
    ]
    if t.pr_check is not None:
        rows.extend(pr_check_rows(t.pr_check))
    for name, seconds, ratio, target, met in rows:
        table.add_row(name, f"{seconds:.3f}", ratio, target, "" if met == "" else str(met))
    return table


def main() -> None:
    """Build the tree, time each measure and print them with their ratios and targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, default=None, help="build the tree here and keep it")
    parser.add_argument(
        "--pr-check-only", action="store_true", help="time only the PR check (cold and warm)"
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
    else:
        measure_all(root, planted, all_files, args.repeat, console)
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


def measure_all(
    root: Path, planted: list[Path], all_files: list[Path], repeat: int, console: Console
) -> None:
    """Every measure, printed as it is taken, then the table."""
    t_grep = time_grep(root, repeat)
    console.print(f"grep -r: {t_grep:.3f} s")
    t_full = time_full_sweep(root, repeat)
    console.print(f"full sweep: {t_full:.3f} s ({t_full / t_grep:.1f}x grep)")
    t_resweep, reread = time_resweep(root, planted[3], repeat)
    console.print(f"re-sweep: {t_resweep:.3f} s ({t_resweep / t_grep:.1f}x grep)")
    t_parse_all = time_parse_all(all_files, console)
    console.print(f"LibCST parse of every file: {t_parse_all:.1f} s")
    pr = time_pr_check(root, repeat)  # last: it commits the tree (the sweeps above walk it)
    console.print(f"PR check: cold {pr.cold:.3f} s, warm {pr.warm:.3f} s")
    console.print(results_table(Timings(t_grep, t_full, t_resweep, t_parse_all, pr)))
    console.print(f"re-sweep read {reread} file(s) after a one-file change")


if __name__ == "__main__":
    main()
