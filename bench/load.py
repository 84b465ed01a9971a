"""Driving a server with wrk (bench/wrk/post.lua): one POST body, a unique header per request.

wrk is a C load generator; a Python client loop tops out near the rates it is meant to measure.
The CPU wrk itself used is read from the kernel's accounting of this process's children, so a
run can say whether the client, not the server, was the limit.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

LUA_SCRIPT = Path(__file__).resolve().parent / "wrk" / "post.lua"
INSTALL_HINT = (
    "wrk is not installed: `scripts/install_system_deps.sh bench` (as root) or "
    "`apt-get install wrk` (Debian); elsewhere see github.com/wg/wrk"
)


@dataclass(frozen=True)
class Load:
    """What to send: a path on the server, a body, fixed headers and the header made unique."""

    path: str
    body_file: Path
    headers: dict[str, str]
    unique_header: str


@dataclass(frozen=True)
class LoadResult:
    """One wrk run: rate, latency percentiles, answers by kind, and wrk's own CPU share."""

    rate: float
    p50_ms: float
    p99_ms: float
    accepted: int
    repeated: int
    refused: int
    socket_errors: int
    client_cpu: float  # wrk's CPU seconds per second of the run (1.0 = one core busy)


def wrk_binary() -> str:
    """The wrk on PATH; exits with how to install it when there is none."""
    found = shutil.which("wrk")
    if found is None:
        raise SystemExit(INSTALL_HINT)
    return found


def run_wrk(
    base_url: str,
    load: Load,
    run_id: str,
    *,
    connections: int,
    seconds: float,
    mean_delay_ms: float = 0.0,
    threads: int = 2,
) -> LoadResult:
    """Run wrk against ``base_url + load.path``; every request carries ``run_id`` in its header."""
    command = [
        wrk_binary(),
        f"--threads={threads}",
        f"--connections={connections}",
        f"--duration={max(1, round(seconds))}s",
        "--timeout=10s",
        f"--script={LUA_SCRIPT}",
    ]
    for name, value in load.headers.items():
        command += ["--header", f"{name}: {value}"]
    command += [base_url + load.path, "--", str(load.body_file), load.unique_header, run_id]
    command.append(f"{mean_delay_ms:.3f}")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    finished = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if finished.returncode != 0:
        raise SystemExit(f"wrk failed ({finished.returncode}): {finished.stderr.strip()}")
    figures = json.loads(finished.stdout.strip().splitlines()[-1])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return LoadResult(
        rate=figures["requests"] / (figures["duration_us"] / 1e6),
        p50_ms=figures["p50_us"] / 1000,
        p99_ms=figures["p99_us"] / 1000,
        accepted=figures["accepted"],
        repeated=figures["repeated"],
        refused=figures["refused"],
        socket_errors=sum(
            figures[name] for name in ("connect_errors", "read_errors", "write_errors", "timeouts")
        ),
        client_cpu=cpu / wall,
    )
