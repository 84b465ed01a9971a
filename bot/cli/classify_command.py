"""``repairbot classify``: read a CI report and print its findings."""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, BinaryIO

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

from fixers.classify.failures import JOB, Finding
from fixers.classify.findings_json import finding_to_dict
from fixers.classify.root_causes import classify_report
from fixers.intake import FailureReport, Format, IntakeError, read_report

_PROGRESS_FROM_BYTES = 16 << 20
_TESTS_SHOWN = 5


def register(app: typer.Typer) -> None:
    """Add the ``classify`` command to the application."""
    app.command("classify")(classify)


def classify(
    source: Annotated[str, typer.Argument(help="Log or report file, or - for standard input")],
    format: Annotated[
        Format | None, typer.Option("--format", help="Force the input format")
    ] = None,
    stage: Annotated[
        str | None, typer.Option(help="Stage the log came from (sets the GPU type)")
    ] = None,
    repo_root: Annotated[
        str | None, typer.Option(help="Repository root as it appears in paths")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print findings as JSON")] = False,
) -> None:
    """Classify a CI report: console text, JUnit XML, testReport or analysis JSON."""
    err = Console(stderr=True, emoji=False)
    try:
        report = _read(source, format, stage, show_progress=not as_json and sys.stderr.isatty())
    except (IntakeError, OSError) as exc:
        err.print(f"[red]error:[/red] {source}: {exc}")
        raise typer.Exit(2) from exc
    findings = classify_report(report, repo_root=repo_root)
    if as_json:
        document = {
            "format": report.format.value,
            "stages": report.stages,
            "notes": report.notes,
            "findings": [finding_to_dict(f) for f in findings],
        }
        typer.echo(json.dumps(document, indent=2))
        return
    _print_findings(Console(emoji=False), report, findings)


def _read(
    source: str, format: Format | None, stage: str | None, *, show_progress: bool
) -> FailureReport:
    if source == "-":
        return read_report(sys.stdin.buffer, format=format, stage=stage)
    path = Path(source)
    size = path.stat().st_size
    with path.open("rb") as raw:
        progress = _progress() if show_progress and size >= _PROGRESS_FROM_BYTES else None
        with progress or nullcontext():
            stream: BinaryIO = raw
            if progress is not None:
                stream = progress.wrap_file(raw, total=size, description="reading")
            return read_report(stream, format=format, stage=stage)


def _progress() -> Progress:
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=Console(stderr=True, emoji=False),
        transient=True,
    )


def _print_findings(console: Console, report: FailureReport, findings: list[Finding]) -> None:
    for note in report.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
    console.print(
        f"{report.format.value}: {len(report.failures)} failure(s), {len(findings)} root cause(s)"
    )
    for number, finding in enumerate(findings, start=1):
        fixer = finding.fixer or "report only"
        title = f"{number}. [bold]{finding.signature}[/bold]"
        if finding.class_name:
            title += f"  [cyan]{escape(finding.class_name)}[/cyan]"
        console.print(f"\n{title}  [dim]fixer: {fixer}[/dim]")
        console.print(f"   {escape(finding.message[:300])}", soft_wrap=True)
        if finding.frame:
            where = f"   at {escape(finding.frame.location())}"
            if finding.class_frame:
                where += f" (class statement at {escape(finding.class_frame.location())})"
            console.print(where)
        shown = ", ".join(finding.tests[:_TESTS_SHOWN])
        more = (
            f" … and {len(finding.tests) - _TESTS_SHOWN} more"
            if len(finding.tests) > _TESTS_SHOWN
            else ""
        )
        if finding.kind == JOB:
            console.print("   the job's failure: no test failed for it (no test id)")
        else:
            console.print(f"   {len(finding.tests)} test(s): {escape(shown)}{more}", soft_wrap=True)
        if finding.stages:
            gpus = ", ".join(finding.gpu_types) or "unknown GPU"
            console.print(f"   stages: {escape(', '.join(finding.stages))} ({escape(gpus)})")
