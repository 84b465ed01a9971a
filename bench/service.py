"""Shared by the service benchmarks: start real server processes and wait until they answer."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

BIN = Path(sys.executable).parent


def free_port() -> int:
    """An unused loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(
    args: list[str], env: dict[str, str], log: Path, ready_url: str
) -> subprocess.Popen[bytes]:
    """Start a server process and wait for ``ready_url`` to answer 200."""
    process = subprocess.Popen(
        args,
        env={**os.environ, **env},
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(ready_url, timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.2)
        if process.poll() is not None:
            break
    raise SystemExit(f"{args[0]} did not start:\n{log.read_text()[-2000:]}")


def stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate a server process group."""
    os.killpg(process.pid, 15)
    process.wait(timeout=30)


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]
