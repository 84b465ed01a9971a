"""Classifier throughput on a 100 MB CI log, against `grep -E` with the same patterns.

Run: .venv/bin/python bench/classify.py [--size-mb 100] [--repeat 3] [--style actions|jenkins]

The log is real pytest output (tests/fixtures/logs/py312/combined.console.txt) buried in the
middle of CI noise: xdist progress lines with PASSED tests and build chatter, every line
prefixed the way the CI writes it — GitHub Actions by default (`2026-07-30T10:55:18.2470097Z `
timestamps, `##[group]`/`##[endgroup]` around steps, `##[error]` at the end), or Jenkins
Timestamper (`[2026-11-29T14:49:57.123Z] `) with `--style jenkins`. The classifier must strip
those prefixes to find the failures (the bench checks it does). The classifier runs in a child
process (so peak RSS is its own, read with wait4) and times only its own work; grep runs with
the signature patterns translated to ERE. Best of N runs each.
Targets (issues #2, #18): throughput at least 0.5x grep's, peak RSS at most 100 MB.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL_LOG = ROOT / "tests" / "fixtures" / "logs" / "py312" / "combined.console.txt"
EXPECTED = REAL_LOG.with_name("combined.console.expected.json")
WORDS = (
    b"compile link wheel kernel cuda warmup tokens throughput latency step loss nccl rank".split()
)


def _stamp(style: str, index: int) -> bytes:
    if style == "actions":
        return b"2026-07-30T10:%02d:%02d.%07dZ " % (index // 60 % 60, index % 60, index % 10**7)
    return b"[2026-11-29T14:%02d:%02d.%03dZ] " % (index // 60 % 60, index % 60, index % 1000)


def make_log(path: Path, size_mb: int, style: str = "actions") -> None:
    """Write ``size_mb`` MB of timestamped noise with the real failing pytest log in the middle."""
    rng = random.Random(0)
    target = size_mb * 1_000_000
    real = REAL_LOG.read_bytes().splitlines(keepends=True)
    written, index, planted = 0, 0, False
    with path.open("wb") as out:
        while written < target:
            block = []
            for _ in range(10_000):
                index += 1
                stamp = _stamp(style, index)
                if style == "actions" and index % 5000 == 0:
                    block.append(stamp + b"##[endgroup]\n")
                    block.append(stamp + b"##[group]Run shard %d\n" % (index // 5000))
                elif index % 2:
                    test = rng.choice(WORDS).decode()
                    block.append(
                        stamp
                        + b"[gw%d] [ %2d%%] PASSED tests/unittest/test_%s.py::test_%d\n"
                        % (index % 4, index % 100, test.encode(), index)
                    )
                else:
                    block.append(stamp + b" ".join(rng.choice(WORDS) for _ in range(9)) + b"\n")
            if not planted and written > target // 2:
                block.extend(_stamp(style, index) + line for line in real)
                planted = True
            data = b"".join(block)
            out.write(data)
            written += len(data)
        if style == "actions":
            out.write(_stamp(style, index) + b"##[error]Process completed with exit code 1.\n")


def ere_patterns() -> list[str]:
    """The classifier's signature patterns, translated from Python syntax to POSIX ERE."""
    from fixers.classify.signatures import builtin_signatures

    translated = []
    for signature in builtin_signatures():
        pattern = re.sub(r"\(\?P<\w+>", "(", signature.pattern.pattern).replace("(?:", "(")
        translated.append(pattern.replace(r"\d", "[0-9]"))
    return translated


def run_child(log: Path) -> tuple[float, int, int]:
    """Classify in a child process: (seconds of its own work, peak RSS in bytes, findings)."""
    result = subprocess.run(
        [sys.executable, __file__, "--child", str(log)], capture_output=True, check=True
    )
    measured = json.loads(result.stdout)
    return measured["seconds"], measured["peak_rss"], measured["findings"]


def peak_rss_bytes() -> int:
    """This process's high-water RSS since exec (VmHWM), not inherited from a forking parent."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(log: Path) -> None:
    """The measured work: stream, classify, count findings."""
    from fixers.classify.root_causes import classify_report
    from fixers.intake import read_report

    start = time.perf_counter()
    with log.open("rb") as stream:
        findings = classify_report(read_report(stream))
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "findings": len(findings), "peak_rss": peak_rss_bytes()}))


def run_grep(log: Path, patterns: Path) -> float:
    start = time.perf_counter()
    result = subprocess.run(
        ["grep", "-E", "-c", "-f", str(patterns), str(log)], capture_output=True
    )
    seconds = time.perf_counter() - start
    if result.returncode not in (0, 1):
        raise SystemExit(f"grep failed: {result.stderr.decode()}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--style", choices=("actions", "jenkins"), default="actions")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    if shutil.which("grep") is None:
        raise SystemExit("grep is needed for the baseline")

    from rich.console import Console

    from fixers.intake.anchors import scanner_backend

    console = Console()
    with tempfile.TemporaryDirectory(prefix="repairbot-bench-") as tmp:
        log, patterns = Path(tmp) / "console.log", Path(tmp) / "patterns.ere"
        with console.status(f"writing a {args.size_mb} MB console log"):
            make_log(log, args.size_mb, args.style)
        patterns.write_text("\n".join(ere_patterns()) + "\n")
        megabytes = log.stat().st_size / 1e6
        subprocess.run(
            ["cat", str(log)], stdout=subprocess.DEVNULL, check=True
        )  # warm the page cache
        ours, rss, findings = [], 0, 0
        grep = []
        with console.status("measuring"):
            for _ in range(args.repeat):
                seconds, peak, findings = run_child(log)
                ours.append(seconds)
                rss = max(rss, peak)
                grep.append(run_grep(log, patterns))
    best, best_grep = min(ours), min(grep)
    console.print(
        f"log: {megabytes:.1f} MB ({args.style} style), scanner backend: {scanner_backend()}, "
        f"findings: {findings}"
    )
    console.print(
        f"repairbot classify: {megabytes / best:8.1f} MB/s  ({best:.3f} s, best of {args.repeat})"
    )
    console.print(f"grep -E (baseline): {megabytes / best_grep:8.1f} MB/s  ({best_grep:.3f} s)")
    console.print(f"throughput ratio to grep: {best_grep / best:.2f}x  (target >= 0.5x)")
    console.print(f"peak RSS of the classifier: {rss / 2**20:.1f} MiB  (target <= 100 MiB)")
    expected = len(json.loads(EXPECTED.read_text())["findings"])
    if findings != expected:
        raise SystemExit(f"found {findings} root causes, the planted log has {expected}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
