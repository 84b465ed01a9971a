"""Benchmark: learning a migration from a long history, against ``git log`` and the sweep.

One run builds a repository with ``git fast-import``: 200 files holding 500 subclasses of one
base, 20,000 commits, and (at about commit 19,000) the contract commit that renames the base's
abstract ``dispatch`` to ``ship(parcel, *, priority=0)`` and migrates 400 of the subclasses; the
last 100 are missed. Then, in the same run, it measures:

* ``git log --format=%H -- <base file>`` (baseline 1: walking the base's history at all),
* finding the contract commit and learning the rule (target: at most 1 s),
* today's sweep of the same tree (``run_sweep``, baseline 2),
* the full fix of the failure (sweep + learning + every codemod, no import check): target at
  most 2x the sweep,

and prints each figure with its ratio to its baseline, first on the repository as cloned, then
with a commit-graph and changed-path Bloom filters written (what the service's mirrors keep).
Each timing is the best of ``--repeat``.
Usage: ``python bench/learn.py [--commits N] [--repeat N] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.progress import Progress

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fixers.classify.failures import Failure, Finding
from fixers.classify.root_causes import classify_failures
from fixers.contracts.model import Contract
from fixers.learned.engine import MigrationEngine
from fixers.learned.learning import Learning
from fixers.learned.policy import Policy
from fixers.sweep.index import RepoIndex
from fixers.sweep.outcome import FixResult
from fixers.sweep.run import fix, run_sweep

T = TypeVar("T")
FILES, CLASSES, MISSED = 200, 500, 100
TARGET_LEARN_S, TARGET_FIX_RATIO = 1.0, 2.0
BASE = {
    "before": "import abc\n\n\nclass Carrier(abc.ABC):\n    @abc.abstractmethod\n"
    "    def dispatch(self, parcel):\n        ...\n",
    "after": "import abc\n\n\nclass Carrier(abc.ABC):\n    @abc.abstractmethod\n"
    "    def ship(self, parcel, *, priority=0):\n        ...\n",
}


def _unit(index: int, migrated: set[int]) -> str:
    """One file of subclasses: classes ``index``, ``index + FILES``, ... below CLASSES."""
    lines = ["from fleet.base import Carrier\n"]
    for number in range(index, CLASSES, FILES):
        migrated_sig = "ship(self, parcel, *, priority=0)"
        sig = migrated_sig if number in migrated else "dispatch(self, parcel)"
        lines.append(f"\n\nclass Unit{number}(Carrier):\n    def {sig}:\n        return {number}\n")
    return "".join(lines)


def _blob(path: str, text: str) -> str:
    data = text.encode()
    return f"M 100644 inline {path}\ndata {len(data)}\n{text}\n"


def _stream(commits: int) -> Iterator[str]:
    """A fast-import stream of the whole history."""
    contract_at = commits - 1_000
    migrated = set(range(CLASSES - MISSED))
    when = 1_700_000_000
    for n in range(commits):
        files: list[str] = []
        if n == 0:
            files.append(_blob("fleet/__init__.py", ""))
            files.append(_blob("fleet/base.py", BASE["before"]))
            files.extend(_blob(f"fleet/units/u{i}.py", _unit(i, set())) for i in range(FILES))
            subject = "fleet: carriers"
        elif n == contract_at:
            files.append(_blob("fleet/base.py", BASE["after"]))
            files.extend(_blob(f"fleet/units/u{i}.py", _unit(i, migrated)) for i in range(FILES))
            subject = "Carrier.dispatch becomes ship with a priority"
        else:
            files.append(_blob(f"churn/c{n % 300}.py", f"VALUE = {n}\n"))
            subject = f"churn {n}"
        message = subject.encode()
        yield (
            f"commit refs/heads/main\ncommitter dev <dev@example.com> {when + n} +0000\n"
            f"data {len(message)}\n{subject}\n"
        )
        yield from files
        yield "\n"


def build(root: Path, commits: int) -> Path:
    """The benchmark repository under ``root`` (checked out at its last commit)."""
    repo = root / "fleet-repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    with subprocess.Popen(
        ["git", "-C", str(repo), "fast-import", "--quiet"], stdin=subprocess.PIPE
    ) as proc:
        assert proc.stdin is not None
        for chunk in _stream(commits):
            proc.stdin.write(chunk.encode())
        proc.stdin.close()
        if proc.wait() != 0:
            raise SystemExit("git fast-import failed")
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "-f", "main"], check=True)
    return repo


def best(repeat: int, run: Callable[[], T]) -> tuple[float, T]:
    """The fastest of ``repeat`` runs and the last result."""
    times: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return min(times), result


def measure(console: Console, repo: Path, findings: list[Finding], repeat: int) -> None:
    """Time the four figures on ``repo`` and print them with their ratios."""

    def git_log() -> object:
        return subprocess.run(
            ["git", "-C", str(repo), "log", "--format=%H", "--", "fleet/base.py"],
            check=True,
            capture_output=True,
        )

    def learn() -> list[Learning]:
        return MigrationEngine(repo, RepoIndex(repo), Policy()).learn(findings)

    def sweep() -> object:
        contract = Contract(name="fleet", base="Carrier", forbidden="dispatch", hook="ship")
        return run_sweep(repo, [contract])

    def full_fix() -> FixResult:
        return fix(repo, [], imports=False, findings=findings)

    log_s, _ = best(repeat, git_log)
    learn_s, learned = best(repeat, learn)
    sweep_s, _ = best(repeat, sweep)
    fix_s, result = best(repeat, full_fix)
    [learning] = learned
    console.print(f"  learned: {learning.summary()[:150]}", soft_wrap=True)
    console.print(f"  fix: {len(result.changes)} file(s) changed, {MISSED} classes missed")
    verdict = "met" if learn_s <= TARGET_LEARN_S else "NOT met"
    console.print(
        f"  git log -- fleet/base.py (baseline 1): {log_s * 1000:.1f} ms; contract commit "
        f"+ rule: {learn_s * 1000:.1f} ms = {learn_s / log_s:.1f}x git log; "
        f"target <= {TARGET_LEARN_S:.0f} s: {verdict}",
        soft_wrap=True,
    )
    ratio = fix_s / sweep_s
    verdict = "met" if ratio <= TARGET_FIX_RATIO else "NOT met"
    console.print(
        f"  today's sweep (baseline 2): {sweep_s * 1000:.1f} ms; full fix (sweep + learn "
        f"+ codemods): {fix_s * 1000:.1f} ms = {ratio:.2f}x the sweep; "
        f"target <= {TARGET_FIX_RATIO:.0f}x: {verdict}",
        soft_wrap=True,
    )


def main() -> None:
    """Build, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="build the repository here")
    args = parser.parse_args()
    console = Console()
    root = args.keep or Path(tempfile.mkdtemp(prefix="repairbot-bench-learn-"))
    try:
        with Progress(console=console, transient=True) as progress:
            progress.add_task(f"building {args.commits:,} commits with git fast-import", total=None)
            repo = build(root, args.commits)
        failure = Failure(
            test_id="tests/test_fleet.py::test_all",
            error_text="TypeError: Can't instantiate abstract class Unit499 without an "
            "implementation for abstract method 'ship'",
        )
        findings = classify_failures([failure])

        console.print(f"history: {args.commits:,} commits, {CLASSES} subclasses in {FILES} files")
        for label in ("as cloned (no commit-graph)", "with a commit-graph (as mirrors keep)"):
            if label.startswith("with"):
                # What the service's mirrors keep after every fetch (bot/forges/github/mirror.py).
                subprocess.run(
                    ["git", "-C", str(repo), "commit-graph", "write", "--reachable",
                     "--changed-paths"],
                    check=True,
                )  # fmt: skip
            console.print(f"[bold]{label}[/bold]")
            measure(console, repo, findings, args.repeat)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
