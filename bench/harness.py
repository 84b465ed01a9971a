"""Shared by the service benchmark scripts: their command line, the server's environment, a
``repairbot serve`` (or any server) running for the length of a ``with`` block, latency maths.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.service import BIN, percentile, start, stop

WEBHOOK_SECRET = "bench-webhook-secret-0123456789"
CI_TOKEN = "bench-ci-token-0123456789"


def bench_parser(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser whose help is ``doc`` (a script's docstring), laid out as written."""
    return argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )


def service_env(
    data_dir: Path,
    repository_root: Path,
    *,
    webhook_secret: str = WEBHOOK_SECRET,
    ci_token: str = CI_TOKEN,
    **extra: str,
) -> dict[str, str]:
    """The environment of a test-mode ``repairbot`` that keeps its data in ``data_dir``.

    ``extra`` adds (or overrides) variables, e.g. ``REPAIRBOT_EMBEDDED_WORKER="false"``.
    """
    return {
        "REPAIRBOT_ENVIRONMENT": "test",
        "REPAIRBOT_DATA_DIR": str(data_dir),
        # Required outside development: the targets are built in this run's folder.
        "REPAIRBOT_REPOSITORY_ROOTS": f'["{repository_root!s}"]',
        "REPAIRBOT_GITHUB_WEBHOOK_SECRET": webhook_secret,
        "REPAIRBOT_CI_TOKEN": ci_token,
        **extra,
    }


def local_url(port: int) -> str:
    """The loopback base URL of a server on ``port``."""
    return f"http://127.0.0.1:{port}"


def serve_command(port: int, *options: str) -> list[str]:
    """The command line of ``repairbot serve`` on ``port``, followed by ``options``."""
    return [str(BIN / "repairbot"), "serve", "--port", str(port), *options]


@contextmanager
def serving(
    command: list[str], port: int, env: dict[str, str], log: Path, ready_path: str = "/readyz"
) -> Iterator[str]:
    """Run ``command`` (a server on ``port``) until the block ends; yields its base URL.

    It starts when ``ready_path`` answers 200; its output goes to ``log``.
    """
    process = start(command, env, log, local_url(port) + ready_path)
    try:
        yield local_url(port)
    finally:
        stop(process)


def percentile_ms(seconds: list[float], fraction: float) -> float:
    """The nearest-rank percentile of latencies in seconds, in milliseconds."""
    return percentile(seconds, fraction) * 1000
