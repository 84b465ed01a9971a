"""``repairbot demo``: a real failing target → the running service → a fix PR."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    import httpx


def register(app: typer.Typer) -> None:
    """Add ``demo`` to the application."""
    app.command("demo")(demo)


def demo(
    url: Annotated[str, typer.Option(help="The running service")] = "http://127.0.0.1:8000",
    workdir: Annotated[
        Path | None, typer.Option(help="Where to build the target repository")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the repair")] = 300,
) -> None:
    """Build the legacy target, make its tests fail for real, post the failure, show the PR."""
    # Imported here, like every subcommand's own dependencies: `repairbot --help` and the other
    # subcommands start without the HTTP client and the demo target.
    import httpx

    from bot.cli.demo_target import build_target, post_failure, run_tests, wait_for_runs
    from bot.config import get_settings
    from bot.runner.sandbox import sandbox_options
    from fixers.repo.input_rules import MAX_SQL_INT

    console = Console(emoji=False)
    settings = get_settings()
    # Fail before building anything when the service is not there (bot.cli.failures says so).
    httpx.get(f"{url.rstrip('/')}/healthz", timeout=10).raise_for_status()
    stamp = int(time.time() * 1000)
    target = (workdir or settings.data_dir / "demo").resolve() / f"target-{stamp}"
    target.parent.mkdir(parents=True, exist_ok=True)
    with console.status("building the target repository from the legacy workers"):
        head = build_target(target)
    with console.status("running the target's tests (they fail: pre-contract code)"):
        before = run_tests(target, sandbox=sandbox_options(settings))
    console.print(f"target {escape(str(target))} at {head[:12]}: pytest exit {before.returncode}")
    with httpx.Client(base_url=url, timeout=30) as client:
        answer = post_failure(
            client,
            token=settings.ci_token.get_secret_value(),
            repo=target,
            head_sha=head,
            console=before.console,
            # Build numbers are 32-bit columns: the millisecond stamp wraps (every ~25 days).
            build_number=stamp % MAX_SQL_INT,
        )
        console.print(f"posted the failure: report {answer['report_id']} ({url}{answer['url']})")
        with console.status("waiting for the repair"):
            report = wait_for_runs(client, answer["url"], timeout_s=timeout)
        _show_outcome(console, client, url, report, timeout_s=timeout)
    if not any(run["fix_id"] for run in report["runs"]):
        raise typer.Exit(1)


def _show_outcome(
    console: Console, client: httpx.Client, url: str, report: dict[str, Any], *, timeout_s: float
) -> None:
    """What the service found and did: findings, runs, and each fix PR with its verification."""
    for finding in report["findings"]:
        console.print(
            f"  found {finding['signature']} {escape(str(finding.get('class_name')))} "
            f"({finding['test_count']} test(s))"
        )
    for run in report["runs"]:
        console.print(f"  run {run['id']}: {run['state']} — {escape(run['reason'])}")
        if run["fix_id"]:
            _show_fix(console, client, url, run["fix_id"], timeout_s=timeout_s)


def _show_fix(
    console: Console, client: httpx.Client, url: str, fix_id: int, *, timeout_s: float
) -> None:
    from bot.cli.demo_target import wait_for_verification

    fix = client.get(f"/api/v1/fixes/{fix_id}").raise_for_status().json()
    console.print(f"[green]fix PR #{fix['number']}[/green]: {escape(fix['title'])}")
    console.print(f"  branch {escape(fix['branch'])} in {escape(fix['repository'])}")
    console.print(f"  files: {escape(', '.join(fix['files']))}")
    console.print(f"  API: {url}/api/v1/fixes/{fix['id']}")
    with console.status("verifying the fix (before and after, in the sandbox)"):
        verification = wait_for_verification(client, fix["id"], timeout_s=timeout_s)
    said = verification["verdict"] or verification["state"]
    console.print(
        f"  verification #{verification['id']}: [bold]{said}[/bold] — "
        f"{escape(verification['reason'])}"
    )
