"""The ``repairbot`` command line: one module per subcommand, each with ``register(app)``."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from bot.cli import (
    check_command,
    classify_command,
    config_command,
    demo_command,
    fix_command,
    reconcile_command,
    serve_command,
    settings_command,
    sweep_command,
    worker_command,
)
from bot.cli.failures import explain
from bot.version import __version__


def build_app() -> typer.Typer:
    """Build the Typer application with every subcommand registered."""
    app = typer.Typer(
        name="repairbot",
        help="Classify CI failures, sweep repositories for contract violations, and fix them.",
        no_args_is_help=True,
        add_completion=False,
    )
    app.callback()(_root)
    for module in (
        classify_command,
        sweep_command,
        check_command,
        fix_command,
        config_command,
        serve_command,
        worker_command,
        demo_command,
        reconcile_command,
        settings_command,
    ):
        module.register(app)
    return app


def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version and exit"
        ),
    ] = False,
) -> None:
    """repairbot: automated repair of API-contract CI breakages."""


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"repairbot {__version__}")
        raise typer.Exit()


def main() -> None:
    """Console-script entry point: expected failures end in one line (``bot.cli.failures``);
    ``--debug`` anywhere on the command line shows their traceback instead."""
    args = sys.argv[1:]
    debug = "--debug" in args
    app = build_app()
    if debug:
        app(args=[a for a in args if a != "--debug"], prog_name="repairbot")
        return
    try:
        app(args=args, prog_name="repairbot")
    except Exception as exc:  # only expected failures are translated; the rest re-raised
        explained = explain(exc)
        if explained is None:
            raise
        Console(stderr=True, emoji=False, highlight=False).print(
            f"[red]error:[/red] {escape(explained.message)} (--debug shows the traceback)",
            soft_wrap=True,
        )
        sys.exit(explained.exit_code)
