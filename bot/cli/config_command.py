"""``repairbot config check [PATH]``: every problem of a ``.repairbot.toml`` at once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from bot.cli.sweep_command import check_root
from fixers.contracts.model import CONFIG_FILE, load_config
from fixers.repo.paths import FileRefused, read_repo_file
from fixers.repo.policy import parse_policy


def register(app: typer.Typer) -> None:
    """Add the ``config`` command group to the application."""
    group = typer.Typer(help="Check a repository's .repairbot.toml.", no_args_is_help=True)
    group.command("check")(config_check)
    app.add_typer(group, name="config")


def config_problems(root: Path) -> list[str]:
    """Every problem of ``root``'s ``.repairbot.toml``: the schema's (with line numbers), the
    contracts' and the service's own tables' (``[repairbot]``, ``[autonomy]``)."""
    problems = list(load_config(root).errors)
    try:
        text = read_repo_file(root, CONFIG_FILE).decode("utf-8")
    except (OSError, FileRefused, UnicodeDecodeError):
        return problems  # absent, or unreadable (which load_config already says)
    problems += [p for p in parse_policy(text).errors if p not in problems]
    return problems


def config_check(
    path: Annotated[Path, typer.Argument(help="Repository whose .repairbot.toml to check")] = Path(
        "."
    ),
) -> None:
    """Print every problem of PATH's .repairbot.toml. Exit 1 when there is any."""
    root = check_root(path)
    console = Console(soft_wrap=True, emoji=False, highlight=False)
    problems = config_problems(root)
    if not (root / CONFIG_FILE).exists():
        console.print(f"no {CONFIG_FILE} in {escape(str(root))}: the defaults apply")
        return
    for problem in problems:
        console.print(f"[red]error:[/red] {escape(problem)}")
    if problems:
        console.print(f"{len(problems)} problem(s)")
        raise typer.Exit(1)
    console.print(f"{CONFIG_FILE}: ok")
