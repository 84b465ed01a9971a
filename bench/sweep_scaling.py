"""The scaling curve of ``bench/sweep.py --scales``: the sweep of k times the torch tree.

The tree of scale k is the bench's tree (torch's files and the planted hierarchy, as the package
``torch/``) and k - 1 copies of torch's files as other top-level packages (``torch_copy1/``,
...; the planted hierarchy only in the first, so every scale has the same violations), made of
hard links: the same bytes, read the same way, without k times the disk. For each scale:
``grep -r -l SpecWorkerBase`` over it, and a child process (``python -m bench.sweep_scaling
--child ROOT REPEAT``) that imports the sweep, notes its RSS, then sweeps with an empty cache
``REPEAT`` times and prints its best time and its peak RSS (``VmHWM`` in ``/proc/self/status``:
the child's ``ru_maxrss`` would count the parent's RSS at the fork, torch imported).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from fixers.sweep.index import IndexCache
from fixers.sweep.run import run_sweep

PLANTED_DIR = "_rb_bench"
REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class ScaleRow:
    """One scale of the curve: the tree, grep's time, the sweep's time and memory."""

    scale: int
    files: int
    megabytes: float
    grep: float
    sweep: float
    peak_mib: float
    imports_mib: float


def parse_scales(text: str) -> list[int]:
    """``"1,5,20"`` -> [1, 5, 20]; each scale a positive integer."""
    scales = [int(part) for part in text.split(",") if part.strip()]
    if not scales or min(scales) < 1:
        raise argparse.ArgumentTypeError(f"scales must be positive integers: {text!r}")
    return scales


def _link_tree(source: Path, target: Path, skip: str | None) -> None:
    """Hard-link every file of ``source`` under ``target`` (copy where links fail), leaving
    out hidden folders and the top-level folder ``skip``."""
    for folder, dirs, files in os.walk(source):
        rel = Path(folder).relative_to(source)
        dirs[:] = [d for d in dirs if not d.startswith(".") and (rel != Path(".") or d != skip)]
        (target / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            try:
                os.link(Path(folder, name), target / rel / name)
            except OSError:
                shutil.copyfile(Path(folder, name), target / rel / name)


def build_scaled(tree: Path, dest: Path, scale: int) -> tuple[int, int]:
    """The tree of ``scale`` at ``dest``; its number of ``.py`` files and their bytes."""
    shutil.rmtree(dest, ignore_errors=True)
    _link_tree(tree, dest / "torch", None)
    for copy in range(1, scale):
        _link_tree(tree, dest / f"torch_copy{copy}", PLANTED_DIR)
    files = [p for p in dest.rglob("*.py") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def _sweep_in_child(root: Path, repeat: int) -> tuple[float, float, float]:
    """The best sweep time, the peak RSS and the RSS after imports (MiB) of a child process."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.sweep_scaling", "--child", str(root), str(repeat)],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout
    answer = json.loads(out)
    return answer["seconds"], answer["peak_kib"] / 1024, answer["imports_kib"] / 1024


def _status_kib(field: str) -> int:
    """A ``kB`` field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise LookupError(field)


def measure_scales(
    tree: Path,
    work: Path,
    scales: list[int],
    repeat: int,
    grep: Callable[[Path, int], float],
) -> list[ScaleRow]:
    """One row per scale, each tree built, measured and removed in turn."""
    rows: list[ScaleRow] = []
    for scale in scales:
        dest = work / f"scale-{scale}"
        files, size = build_scaled(tree, dest, scale)
        grep_s = grep(dest, repeat)
        sweep_s, peak, imports = _sweep_in_child(dest, repeat)
        rows.append(ScaleRow(scale, files, size / 1e6, grep_s, sweep_s, peak, imports))
        shutil.rmtree(dest, ignore_errors=True)
    return rows


def scaling_table(rows: list[ScaleRow]) -> Table:
    """The curve: time and memory against the tree's size, and the ratio to grep."""
    table = Table(title="sweep scaling (each sweep in a child process, empty cache)")
    columns = ("scale", "files", "MB", "grep s", "sweep s", "sweep / grep", "µs / file")
    for column in (*columns, "peak RSS MiB", "RSS imports MiB"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(
            f"{row.scale}x",
            f"{row.files:,}",
            f"{row.megabytes:.0f}",
            f"{row.grep:.3f}",
            f"{row.sweep:.3f}",
            f"{row.sweep / row.grep:.1f}x",
            f"{row.sweep / row.files * 1e6:.0f}",
            f"{row.peak_mib:.0f}",
            f"{row.imports_mib:.0f}",
        )
    return table


def child(root: Path, repeat: int) -> None:
    """In the child: sweep ``root`` ``repeat`` times, print the best time, the RSS after the
    imports and the peak RSS (KiB) as JSON."""
    imports_kib = _status_kib("VmRSS")
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        found = run_sweep(root, cache=IndexCache()).report
        times.append(time.perf_counter() - start)
        renames = [v for v in found.violations if v.fix == "rename"]
        stubs = [v for v in found.violations if v.fix == "stub"]
        assert (len(renames), len(stubs)) == (8, 1), found.violations
    peak_kib = _status_kib("VmHWM")
    print(json.dumps({"seconds": min(times), "imports_kib": imports_kib, "peak_kib": peak_kib}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="one sweep of the scaling curve (a child)")
    parser.add_argument("--child", nargs=2, metavar=("ROOT", "REPEAT"), required=True)
    args = parser.parse_args()
    child(Path(args.child[0]), int(args.child[1]))
