"""Classifier throughput on a 100 MB CI log, against `grep -E` with the same patterns.

Run: .venv/bin/python bench/classify.py [--size-mb 100] [--repeat 3]
         [--style actions|jenkins|gitlab|buildkite|travis|all] [--sizes 10,100,1000]

The log is real pytest output (tests/fixtures/logs/py312/combined.console.txt) buried in the
middle of CI noise: xdist progress lines with PASSED tests and build chatter, every line
prefixed the way the CI writes it: GitHub Actions by default (`2026-07-30T10:55:18.2470097Z `
timestamps, `##[group]`/`##[endgroup]` around steps, `##[error]` at the end), Jenkins
Timestamper (`[2026-11-29T14:49:57.123Z] `), GitLab with timestamps (`2026-07-30T10:55:18.290545Z
00O `, `section_start`/`section_end` markers), Buildkite (`\\x1b_bk;t=…\\x07` escapes) or Travis
CI (no stamps; `travis_fold`/`travis_time` markers with their `\\r\\x1b[0K`, and every line ending
in `\\r\\n`, as a terminal writes it). The classifier must strip those prefixes to find the
failures (the bench checks it does).
`--style all` measures every style in one run and says which meet the targets.

The classifier runs in a child process (so peak RSS is its own, VmHWM) and times only its own
work after its imports: loading the signatures and building the scanner (once per process, also
printed on its own), then reading and classifying the log. grep runs with the signature
patterns translated to ERE. Best of N runs each, alternating.

`--sizes 10,100,1000` classifies logs of those sizes in MB (written one at a time to a temp dir
and deleted) and prints time, MB/s, ratio to grep and the child's peak RSS at each size.
Targets (issue #33): throughput at least 1.0x grep's and peak RSS at most 100 MiB at 100 MB.
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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

ROOT = Path(__file__).resolve().parents[1]
REAL_LOG = ROOT / "tests" / "fixtures" / "logs" / "py312" / "combined.console.txt"
EXPECTED = REAL_LOG.with_name("combined.console.expected.json")
WORDS = (
    b"compile link wheel kernel cuda warmup tokens throughput latency step loss nccl rank".split()
)
STYLES = ("actions", "jenkins", "gitlab", "buildkite", "travis")
TARGET_RATIO = 1.0
TARGET_RSS_MIB = 100.0
TARGET_SIZE_MB = 100
_GROUP_EVERY = 5000
_LAST_LINE = {
    "actions": b"##[error]Process completed with exit code 1.\n",
    "gitlab": b"\x1b[31;1mERROR: Job failed: exit code 1\x1b[0;m\n",
    "travis": b'\x1b[31;1mThe command "pytest" exited with 1.\x1b[0m\r\n\r\n'
    b"Done. Your build exited with 1.\r\n",
}


@dataclass(frozen=True)
class Measured:
    """One style at one size: best times of the classifier and of grep, the child's peak RSS."""

    style: str
    size_mb: int
    megabytes: float
    seconds: float
    load_seconds: float
    grep_seconds: float
    peak_rss: int
    findings: int

    @property
    def ratio(self) -> float:
        """Throughput relative to grep's (grep's time over ours), the one-time load included."""
        return self.grep_seconds / self.seconds

    @property
    def log_mb_per_s(self) -> float:
        """The log's own throughput, without the one-time load."""
        return self.megabytes / (self.seconds - self.load_seconds)

    @property
    def log_ratio(self) -> float:
        """The same without the one-time load: what each further log costs a running process."""
        return self.grep_seconds / (self.seconds - self.load_seconds)

    @property
    def rss_mib(self) -> float:
        """Peak RSS of the classifying child in MiB."""
        return self.peak_rss / 2**20

    def meets_targets(self) -> bool:
        """Whether this run meets issue #33's throughput and memory targets."""
        return self.ratio >= TARGET_RATIO and self.rss_mib <= TARGET_RSS_MIB


def _stamp(style: str, index: int) -> bytes:
    clock = (index // 60 % 60, index % 60)
    if style == "actions":
        return b"2026-07-30T10:%02d:%02d.%07dZ " % (*clock, index % 10**7)
    if style == "jenkins":
        return b"[2026-11-29T14:%02d:%02d.%03dZ] " % (*clock, index % 1000)
    if style == "gitlab":
        return b"2026-07-30T10:%02d:%02d.%06dZ 00O " % (*clock, index % 10**6)
    if style == "travis":
        return b""
    return b"\x1b_bk;t=%d\x07" % (1722336918000 + index)


def _group_lines(style: str, index: int) -> list[bytes]:
    """The lines a CI writes between two steps (none for Jenkins), every ``_GROUP_EVERY`` lines."""
    if index % _GROUP_EVERY:
        return []
    step = index // _GROUP_EVERY
    if style == "actions":
        return [b"##[endgroup]\n", b"##[group]Run shard %d\n" % step]
    if style == "gitlab":
        return [
            b"section_end:%d:shard_%d\r\x1b[0K\n" % (1722336918 + index, step - 1),
            b"section_start:%d:shard_%d\r\x1b[0KRun shard %d\n" % (1722336918 + index, step, step),
        ]
    if style == "buildkite":
        return [b"--- :python: Run shard %d\n" % step]
    if style == "travis":
        start = 1722336918 * 10**9 + index
        return [
            b"travis_time:end:%08x:start=%d,finish=%d,duration=1000,event=script\r\x1b[0K\n"
            % (step - 1, start, start + 1000),
            b"travis_fold:end:shard.%d\r\x1b[0K\n" % (step - 1),
            b"travis_fold:start:shard.%d\r\x1b[0Ktravis_time:start:%08x\r\x1b[0K" % (step, step)
            + b"\x1b[33;1m$ ./run_shard.sh %d\x1b[0m\n" % step,
        ]
    return []


def _noise_line(rng: random.Random, index: int) -> bytes:
    if index % 2:
        test = rng.choice(WORDS)
        return b"[gw%d] [ %2d%%] PASSED tests/unittest/test_%s.py::test_%d\n" % (
            index % 4,
            index % 100,
            test,
            index,
        )
    return b" ".join(rng.choice(WORDS) for _ in range(9)) + b"\n"


def make_log(path: Path, size_mb: int, style: str = "actions") -> None:
    """Write ``size_mb`` MB of prefixed noise with the real failing pytest log in the middle."""
    rng = random.Random(0)
    target = size_mb * 1_000_000
    real = REAL_LOG.read_bytes().splitlines(keepends=True)
    written, index, planted = 0, 0, False
    with path.open("wb") as out:
        while written < target:
            block: list[bytes] = []
            for _ in range(10_000):
                index += 1
                stamp = _stamp(style, index)
                groups = _group_lines(style, index)
                if groups:
                    block.extend(stamp + line for line in groups)
                else:
                    block.append(stamp + _noise_line(rng, index))
            if not planted and written > target // 2:
                block.extend(_stamp(style, index) + line for line in real)
                planted = True
            data = b"".join(block)
            if style == "travis":  # a terminal's line ends
                data = data.replace(b"\n", b"\r\n")
            out.write(data)
            written += len(data)
        if style in _LAST_LINE:
            out.write(_stamp(style, index) + _LAST_LINE[style])


def ere_patterns() -> list[str]:
    """The patterns the classifier searches a whole log for, translated from Python syntax to
    POSIX ERE: every signature it scans for (``scan = false`` ones, lint errors and pytest
    running no test, it reads from the last 64 KiB of a log with no failed test only)."""
    from fixers.classify.signatures import builtin_signatures

    translated = []
    for signature in builtin_signatures():
        if not signature.scan:
            continue
        pattern = signature.pattern.pattern.removeprefix("(?m)")  # grep -E reads line by line
        pattern = re.sub(r"\(\?P<\w+>", "(", pattern).replace("(?:", "(")
        translated.append(pattern.replace(r"\d", "[0-9]"))
    return translated


def run_child(log: Path) -> dict[str, float]:
    """Classify in a child process: its seconds (load included), load seconds, RSS, findings."""
    result = subprocess.run(
        [sys.executable, __file__, "--child", str(log)], capture_output=True, check=True
    )
    measured: dict[str, float] = json.loads(result.stdout)
    return measured


def peak_rss_bytes() -> int:
    """This process's high-water RSS since exec (VmHWM), not inherited from a forking parent."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(log: Path) -> None:
    """The measured work: load the signatures and scanner, then stream, classify, count."""
    from io import BytesIO

    from fixers.classify.root_causes import classify_report
    from fixers.intake import read_report

    start = time.perf_counter()
    read_report(BytesIO(b"warm-up\n"))  # loads the signatures, builds the anchor scanner
    loaded = time.perf_counter()
    with log.open("rb") as stream:
        findings = classify_report(read_report(stream))
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "seconds": seconds,
                "load_seconds": loaded - start,
                "findings": len(findings),
                "peak_rss": peak_rss_bytes(),
            }
        )
    )


def run_grep(log: Path, patterns: Path) -> float:
    """Seconds ``grep -E -c`` takes over ``log`` with the ERE patterns in ``patterns``."""
    start = time.perf_counter()
    result = subprocess.run(
        ["grep", "-E", "-c", "-f", str(patterns), str(log)], capture_output=True
    )
    seconds = time.perf_counter() - start
    if result.returncode not in (0, 1):
        raise SystemExit(f"grep failed: {result.stderr.decode()}")
    return seconds


def measure(style: str, size_mb: int, repeat: int, patterns: Path) -> Measured:
    """Write one log in a temp dir, classify it and grep it ``repeat`` times each, delete it."""
    with tempfile.TemporaryDirectory(prefix="repairbot-bench-") as tmp:
        free = shutil.disk_usage(tmp).free
        if free < 2 * size_mb * 1_000_000:
            raise SystemExit(f"{size_mb} MB log: only {free / 1e9:.1f} GB free in {tmp}")
        log = Path(tmp) / "console.log"
        make_log(log, size_mb, style)
        subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)  # page cache
        runs, grep = [], []
        for _ in range(repeat):
            runs.append(run_child(log))
            grep.append(run_grep(log, patterns))
        best = min(runs, key=lambda run: run["seconds"])
        return Measured(
            style=style,
            size_mb=size_mb,
            megabytes=log.stat().st_size / 1e6,
            seconds=best["seconds"],
            load_seconds=best["load_seconds"],
            grep_seconds=min(grep),
            peak_rss=int(max(run["peak_rss"] for run in runs)),
            findings=int(best["findings"]),
        )


def _sizes(text: str) -> list[int]:
    sizes = [int(part) for part in text.split(",") if part.strip()]
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError("sizes are positive whole MB, e.g. 10,100,1000")
    return sizes


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mb", type=int, default=TARGET_SIZE_MB)
    parser.add_argument("--sizes", type=_sizes, help="several sizes in MB: a scaling table")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--style", choices=(*STYLES, "all"), default="actions")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    return parser


def _report_one(console: Console, run: Measured, repeat: int) -> None:
    """The one-size report, as the bench has always printed it."""
    from fixers.intake.anchors import scanner_backend

    mb = run.megabytes
    console.print(
        f"log: {mb:.1f} MB ({run.style} style), scanner backend: {scanner_backend()}, "
        f"findings: {run.findings}"
    )
    console.print(
        f"repairbot classify: {mb / run.seconds:8.1f} MB/s  ({run.seconds:.3f} s, best of "
        f"{repeat}; of which {run.load_seconds * 1000:.0f} ms loading signatures and scanner, "
        f"once per process: {run.log_mb_per_s:.1f} MB/s without it)"
    )
    console.print(
        f"grep -E (baseline): {mb / run.grep_seconds:8.1f} MB/s  ({run.grep_seconds:.3f} s)"
    )
    console.print(
        f"throughput ratio to grep: {run.ratio:.2f}x  (target >= {TARGET_RATIO}x; "
        f"{run.log_ratio:.2f}x without the one-time load)"
    )
    console.print(f"peak RSS of the classifier: {run.rss_mib:.1f} MiB  (target <= 100 MiB)")


def _report_table(console: Console, runs: list[Measured]) -> None:
    """Every style and size, one line each, and whether each style meets the targets."""
    console.print(
        f"{'style':<10} {'size':>7} {'classify':>9} {'load':>6} {'MB/s':>6} {'grep -E':>8} "
        f"{'ratio':>6} {'w/o load':>8} {'peak RSS':>9}  targets"
    )
    for run in runs:
        verdict = ""
        if run.size_mb == TARGET_SIZE_MB:
            verdict = "met" if run.meets_targets() else "NOT met"
        console.print(
            f"{run.style:<10} {run.size_mb:>4} MB {run.seconds:>7.3f} s "
            f"{run.load_seconds * 1000:>3.0f} ms {run.log_mb_per_s:>6.0f} "
            f"{run.grep_seconds:>6.3f} s {run.ratio:>5.2f}x {run.log_ratio:>7.2f}x "
            f"{run.rss_mib:>5.1f} MiB  {verdict}",
            highlight=False,
        )
    console.print(
        f"targets at {TARGET_SIZE_MB} MB: >= {TARGET_RATIO}x grep -E (one-time load included), "
        f"<= {TARGET_RSS_MIB:.0f} MiB peak RSS. Best of each; RSS the highest; MB/s without the "
        "one-time load (signatures and scanner)"
    )


def main() -> None:
    """Measure every requested style and size, print the figures, check the findings."""
    args = _parser().parse_args()
    if args.child:
        child(args.child)
        return
    if shutil.which("grep") is None:
        raise SystemExit("grep is needed for the baseline")

    from rich.console import Console

    console = Console(soft_wrap=True)
    styles = STYLES if args.style == "all" else (args.style,)
    sizes = args.sizes or [args.size_mb]
    expected = len(json.loads(EXPECTED.read_text())["findings"])
    runs: list[Measured] = []
    with tempfile.TemporaryDirectory(prefix="repairbot-bench-") as tmp:
        patterns = Path(tmp) / "patterns.ere"
        patterns.write_text("\n".join(ere_patterns()) + "\n")
        for style in styles:
            for size in sizes:
                with console.status(f"{style}: {size} MB log, measuring"):
                    runs.append(measure(style, size, args.repeat, patterns))
    if len(runs) == 1:
        _report_one(console, runs[0], args.repeat)
    else:
        _report_table(console, runs)
    wrong = [run for run in runs if run.findings != expected]
    if wrong:
        raise SystemExit(
            f"{wrong[0].style}, {wrong[0].megabytes:.0f} MB: found {wrong[0].findings} root "
            f"causes, the planted log has {expected}"
        )


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
