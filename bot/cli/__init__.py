"""The ``repairbot`` command line: one module per subcommand, each with ``register(app)``."""

from __future__ import annotations

import typer

from bot.cli import (
    check_command,
    classify_command,
    config_command,
    demo_command,
    fix_command,
    reconcile_command,
    serve_command,
    sweep_command,
    worker_command,
)


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
    ):
        module.register(app)
    return app


def _root() -> None:
    """repairbot: automated repair of API-contract CI breakages."""


def main() -> None:
    """Console-script entry point."""
    build_app()()
