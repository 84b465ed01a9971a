"""``repairbot sweep``: report every violation of a repository's contracts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from fixers.contracts.model import Contract, contract_from_option
from fixers.sweep.outcome import SweepResult
from fixers.sweep.run import Progress as ProgressCallback
from fixers.sweep.run import run_sweep

PROGRESS_FROM_FILES = 500
# Exit status when the configuration read is invalid (``repairbot config check`` says why).
CONFIG_INVALID = 3


def register(app: typer.Typer) -> None:
    """Add the ``sweep`` command to the application."""
    app.command("sweep")(sweep_command)


def parse_contract_options(options: list[str] | None) -> list[Contract] | None:
    """``--contract`` values as contracts (None: built-in, configured and inferred ones)."""
    if not options:
        return None
    try:
        return [contract_from_option(option) for option in options]
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--contract") from exc


def check_root(path: Path) -> Path:
    """The tree to sweep, or a clear error (exit 2) when it is not a directory."""
    if not path.is_dir():
        Console(stderr=True, emoji=False).print(
            f"[red]error:[/red] {escape(str(path))} is not a directory"
        )
        raise typer.Exit(2)
    return path


@contextmanager
def progress_bar(enabled: bool) -> Iterator[ProgressCallback | None]:
    """A rich progress bar on stderr for large trees (shown once the tree has enough files)."""
    if not enabled:
        yield None
        return
    console = Console(stderr=True, emoji=False)
    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    task = bar.add_task("scanning files", total=None)

    def update(done: int, total: int) -> None:
        if total >= PROGRESS_FROM_FILES:
            if not bar.live.is_started:
                bar.start()
            bar.update(task, completed=done, total=total)

    try:
        yield update
    finally:
        bar.stop()


def print_report(console: Console, report: SweepResult, *, explain: bool = False) -> None:
    """Violations, skips and config problems, one line each (and the notes with ``explain``)."""
    for error in report.config_errors:
        console.print(f"[yellow]config:[/yellow] {escape(error)}")
    names = ", ".join(escape(c.describe()) for c in report.contracts)
    console.print(f"contracts: {names}")
    console.print(f"{report.files} Python files ({report.listing}), {report.files_parsed} parsed")
    for v in report.violations:
        fix = f"[green]{v.fix}[/green]" if v.fix else "[red]needs a human[/red]"
        console.print(f"{escape(v.location())}: [bold]{v.kind}[/bold] {fix}  {escape(v.detail)}")
    for skip in report.skips:
        console.print(f"[yellow]skipped[/yellow] {escape(skip.path)}: {escape(skip.reason)}")
    if explain:
        for note in report.notes:
            console.print(
                f"{escape(note.path)}:{note.line}: [dim]not a violation[/dim] "
                f"{escape(note.class_qualname)}.{escape(note.method)} changes "
                f"{escape(note.field)}: {escape(note.reason)}"
            )
    console.print(report.summary())


def sweep_command(
    path: Annotated[Path, typer.Argument(help="Repository (or any directory) to sweep")],
    contract: Annotated[
        list[str] | None,
        typer.Option(
            "--contract",
            help="Base or Base:forbidden:hook[:restore_hook]; repeatable. "
            "Default: built-in, .repairbot.toml and inferred contracts",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON")] = False,
    no_infer: Annotated[bool, typer.Option("--no-infer", help="Do not infer contracts")] = False,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain", help="Also list the metadata changes that are not violations, and why"
        ),
    ] = False,
) -> None:
    """Find every violation of the contracts in PATH. Exit 1 when any is found, 3 when the
    repository's .repairbot.toml is invalid (its valid part still applied and reported)."""
    root = check_root(path)
    contracts = parse_contract_options(contract)
    with progress_bar(not as_json) as progress:
        report = run_sweep(root, contracts, infer=not no_infer, progress=progress).report
    if as_json:
        typer.echo(json.dumps(report.to_json(explain=explain), indent=2))
    else:
        print_report(Console(soft_wrap=True, emoji=False), report, explain=explain)
    if report.config_errors:
        raise typer.Exit(CONFIG_INVALID)
    if report.violations:
        raise typer.Exit(1)
