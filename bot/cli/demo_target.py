"""The demo target: a git repository built from the runtime's legacy workers, failing for real."""

from __future__ import annotations

import dataclasses
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bot.db.models import TERMINAL_STATES, RunState
from bot.git import commit_all, git
from fixers.sandbox import STRICT, Limits, SandboxOptions, run_isolated

LEGACY_FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "legacy_workers"
# A run waited on is done once its repair ended; ``verifying`` goes on to its verdict.
TERMINAL = {state.value for state in TERMINAL_STATES if state is not RunState.VERIFYING}


@dataclass(frozen=True)
class TestRun:
    """One pytest run of a target: its exit code and console output."""

    returncode: int
    console: bytes


def build_target(destination: Path, source: Path = LEGACY_FIXTURE) -> str:
    """Copy ``source`` into a new git repository at ``destination``; returns the commit SHA."""
    if not source.is_dir():
        raise FileNotFoundError(f"demo fixture not found: {source} (run from a repairbot checkout)")
    shutil.copytree(
        source, destination, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache")
    )
    git(destination, "init", "--quiet", "--initial-branch", "main")
    return commit_all(destination, "Pre-contract speculative workers")


def run_tests(
    repo: Path,
    *,
    python: str = sys.executable,
    timeout_s: float = 600,
    sandbox: SandboxOptions = STRICT,
) -> TestRun:
    """Run the target's pytest suite as its CI would, in the sandbox (``repo`` read-only).

    Raises ``fixers.sandbox.SandboxUnavailable`` when the sandbox cannot run and ``sandbox``
    does not allow running unconfined.
    """
    with tempfile.TemporaryDirectory(prefix="repairbot-demo-tests-") as folder:
        run_dir = Path(folder)
        log = run_dir / "pytest.log"
        result = run_isolated(
            [python, "-m", "pytest", "-p", "no:cacheprovider", "-rfE", "--color=no"],
            cwd=repo,
            run_dir=run_dir,
            log_path=log,
            limits=Limits(timeout_s=timeout_s),
            options=dataclasses.replace(
                sandbox, readonly=(*sandbox.readonly, repo), interpreters=(python,)
            ),
        )
        console = log.read_bytes().split(b"\n", 1)[-1]  # without the "$ command" line
    return TestRun(-1 if result.returncode is None else result.returncode, console)


def post_failure(
    client: httpx.Client,
    *,
    token: str,
    repo: Path,
    head_sha: str,
    console: bytes,
    build_number: int,
    stage: str = "H100_PCIe-PyTorch-1",
) -> dict[str, Any]:
    """Post a console log to the service as a Jenkins pipeline would."""
    params: dict[str, str | int] = {
        "pipeline": "repairbot-demo",
        "build_number": build_number,
        "repository": str(repo),
        "head_sha": head_sha,
        "base_ref": "main",
        "stage": stage,
        "build_url": f"http://jenkins.invalid/job/repairbot-demo/{build_number}/",
    }
    response = client.post(
        "/api/v1/ci-failures",
        params=params,
        content=console,
        headers={"Authorization": f"Bearer {token}"},
    )
    response.raise_for_status()
    answer: dict[str, Any] = response.json()
    return answer


def wait_for_runs(
    client: httpx.Client, report_url: str, *, timeout_s: float = 120
) -> dict[str, Any]:
    """Poll a report until every run reached a terminal state; returns the report."""
    deadline = time.monotonic() + timeout_s
    while True:
        report: dict[str, Any] = client.get(report_url).raise_for_status().json()
        runs = report["runs"]
        if runs and all(run["state"] in TERMINAL for run in runs):
            return report
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"runs still in progress after {timeout_s}s: {[r['state'] for r in runs]}"
            )
        time.sleep(0.1)


def wait_for_verification(
    client: httpx.Client, fix_id: int, *, timeout_s: float = 600
) -> dict[str, Any]:
    """Poll a fix until its latest verification finished; returns that verification."""
    deadline = time.monotonic() + timeout_s
    while True:
        fix: dict[str, Any] = client.get(f"/api/v1/fixes/{fix_id}").raise_for_status().json()
        latest = fix["verifications"][-1] if fix["verifications"] else None
        if latest is not None and latest["state"] not in ("queued", "running"):
            return dict(latest)
        if time.monotonic() > deadline:
            raise TimeoutError(f"fix {fix_id} not verified after {timeout_s}s: {latest}")
        time.sleep(0.5)
