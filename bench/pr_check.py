"""The PR-check figure of ``bench/sweep.py``: the pre-merge contract check on a torch-sized tree.

The tree is committed as a git repository; a PR branch adds a worker that overrides
``forward``. Timed, as ``bot.pipeline.contract_check.task`` runs it (``sweep_pull``: merge-tree, the
base and the merged tree written out and swept, the introduced violations and their fix):

* cold: an empty cache and no tree on disk, as the first check of a repository;
* warm: after each of ``repeat`` one-file pushes to the PR, the check its ``synchronize`` costs
  (the tree on disk moves by one file; the base, unchanged, is not swept again).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bot.git import commit_all, git
from bot.pipeline.contract_check.sweep import Swept, sweep_pull
from bot.pipeline.contract_check.tree import forget_caches

WARM_TARGET_S = 1.0
PR_WORKER = "_rb_bench/worker_pr.py"
PR_SOURCE = (
    "from torch._rb_bench import SpecWorkerBase\n\n\n"
    "class BenchPrWorker(SpecWorkerBase):\n"
    "    def forward(self, x):\n"
    "        return x\n"
)


@dataclass(frozen=True)
class PrCheckTimings:
    """Seconds of a cold and of a warm PR check (each the best of its runs)."""

    cold: float
    warm: float


def _check(repo: Path, base: str, head: str, trees: Path) -> float:
    start = time.perf_counter()
    outcome = sweep_pull(
        repo / ".git", base, head, repository=f"bench/{repo.name}", trees_dir=trees, max_files=3000
    )
    seconds = time.perf_counter() - start
    assert isinstance(outcome, Swept), outcome
    assert [v.class_qualname for v in outcome.introduced] == [
        "torch._rb_bench.worker_pr.BenchPrWorker"
    ]
    assert [c.path for c in outcome.changes] == [PR_WORKER]
    return seconds


def time_pr_check(root: Path, repeat: int) -> PrCheckTimings:
    """Commit ``root`` (a tree named ``torch``), open a PR on it, time cold and warm checks."""
    git(root, "init", "--quiet", "--initial-branch", "main")
    base = commit_all(root, "the tree")
    git(root, "checkout", "--quiet", "-b", "pr")
    worker = root / PR_WORKER
    worker.write_text(PR_SOURCE)
    head = commit_all(root, "a worker that overrides forward")
    cold = []
    for _ in range(repeat):
        forget_caches()  # an empty cache and no tree on disk: the first check of a repository
        with tempfile.TemporaryDirectory(prefix="rb-bench-trees-") as trees:
            cold.append(_check(root, base, head, Path(trees)))
    warm = []
    with tempfile.TemporaryDirectory(prefix="rb-bench-trees-") as trees:
        _check(root, base, head, Path(trees))
        for push in range(repeat):
            with worker.open("a") as handle:
                handle.write(f"# push {push}\n")
            warm.append(_check(root, base, commit_all(root, f"push {push}"), Path(trees)))
    return PrCheckTimings(min(cold), min(warm))


def pr_check_rows(t: PrCheckTimings) -> list[tuple[str, float, str, str, bool | str]]:
    """The bench table's rows for the PR check."""
    return [
        ("PR check, cold cache", t.cold, "1x", "", ""),
        (
            "PR check, warm / cold",
            t.warm,
            f"{t.cold / t.warm:.1f}x faster",
            f"< {WARM_TARGET_S:.0f} s",
            t.warm < WARM_TARGET_S,
        ),
    ]
