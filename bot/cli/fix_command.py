"""``repairbot fix``: classify a CI log (optional), sweep, apply every fix, show or write it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from bot.cli.sweep_command import (
    CONFIG_INVALID,
    check_root,
    parse_contract_options,
    progress_bar,
)
from bot.config import get_settings
from bot.runner.sandbox import sandbox_options
from fixers.classify.failures import Finding
from fixers.contracts.model import Contract, contracts_from_findings
from fixers.learned.breaks import LEARNING_FIXER
from fixers.sweep.outcome import FixResult
from fixers.sweep.run import fix, write_changes

UNREPAIRED = 4  # the log names a break that is left for a human (reported with the reason)


def register(app: typer.Typer) -> None:
    """Add the ``fix`` command to the application."""
    app.command("fix")(fix_command)


def findings_of_log(log: Path, err: Console) -> list[Finding]:
    """The classified failures of ``log`` (exit 2, with the reason, when it cannot be read)."""
    from fixers.classify.root_causes import (
        classify_file,  # the classifier is only needed with --log
    )

    try:
        return classify_file(log)
    except Exception as exc:  # any intake error: report it and stop, exit 2
        err.print(f"[red]error:[/red] cannot classify {escape(str(log))}: {escape(str(exc))}")
        raise typer.Exit(2) from exc


def contracts_from_log(findings: list[Finding], log: Path, err: Console) -> list[Contract] | None:
    """Contracts named by the failures of ``log`` (None, with a note, when it names none)."""
    contracts = contracts_from_findings(findings)
    if any(f.fixer == LEARNING_FIXER for f in findings):
        return contracts  # the log names a contract break: learned, not swept for
    if not contracts:
        err.print(
            f"[yellow]note:[/yellow] {escape(str(log))} names no fixable contract "
            f"({len(findings)} finding(s)); sweeping for every known contract"
        )
        return None
    for contract in contracts:
        err.print(f"log names contract {escape(contract.describe())}")
    return contracts


def print_result(
    console: Console, result: FixResult, show_diff: bool, explain: bool = False
) -> None:
    """Configuration problems, the diff (optional), then what was learned, per-file evidence,
    everything left alone."""
    for error in result.report.config_errors:
        console.print(f"[yellow]config:[/yellow] {escape(error)}")
    if show_diff and result.changes:
        console.print(result.diff(), end="", markup=False, highlight=False, soft_wrap=True)
    for learning in result.learned:
        lines = learning.explain() if explain else [learning.summary()]
        for line in lines:
            console.print(f"[cyan]learned[/cyan] {escape(line)}")
    for change in result.changes:
        console.print(
            f"[bold]{escape(change.path)}[/bold]: {', '.join(change.codemods)} "
            f"on {escape(', '.join(change.classes))}"
        )
        for line in change.evidence.lines() if change.evidence else []:
            console.print(f"    {escape(line)}")
    for skip in [*result.report.skips, *result.skips]:
        where = f"{skip.path} ({skip.class_qualname})" if skip.class_qualname else skip.path
        console.print(f"[yellow]not fixed[/yellow] {escape(where)}: {escape(skip.reason)}")


def fix_command(
    path: Annotated[Path, typer.Argument(help="Repository to fix")],
    log: Annotated[
        Path | None,
        typer.Option(
            "--log", help="CI log or report naming the failure", exists=True, dir_okay=False
        ),
    ] = None,
    contract: Annotated[
        list[str] | None,
        typer.Option("--contract", help="Base or Base:forbidden:hook[:restore_hook]; repeatable"),
    ] = None,
    diff: Annotated[bool, typer.Option("--diff", help="Print a unified diff (default)")] = False,
    write: Annotated[bool, typer.Option("--write", help="Write the fixed files")] = False,
    imports: Annotated[
        bool,
        typer.Option(
            "--import-check/--no-import-check", help="Import changed modules in the sandbox"
        ),
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON")] = False,
    explain: Annotated[
        bool,
        typer.Option("--explain", help="Say why each subclass was fixed, reported or skipped"),
    ] = False,
) -> None:
    """Fix every contract violation in PATH: print the diff (--diff) or write it (--write)."""
    if diff and write:
        raise typer.BadParameter("choose one of --diff and --write")
    root = check_root(path)
    err = Console(stderr=True, emoji=False)
    contracts = parse_contract_options(contract)
    findings = findings_of_log(log, err) if log is not None else []
    if contracts is None and log is not None:
        contracts = contracts_from_log(findings, log, err)
    with progress_bar(not as_json) as progress:
        sandbox = sandbox_options(get_settings())
        result = fix(
            root, contracts, imports=imports, progress=progress, sandbox=sandbox, findings=findings
        )
    written = write_changes(root, result) if write else []
    if as_json:
        typer.echo(json.dumps({**result.to_json(), "written": written}, indent=2))
    else:
        console = Console(soft_wrap=True, emoji=False)
        print_result(console, result, show_diff=not write, explain=explain)
        if write:
            Console(emoji=False).print(f"wrote {len(written)} file(s)")
    if result.report.config_errors:
        raise typer.Exit(CONFIG_INVALID)
    if any(c.evidence is not None and not c.evidence.ok for c in result.changes):
        raise typer.Exit(1)
    if any(learning.unrepaired for learning in result.learned):
        raise typer.Exit(UNREPAIRED)
