"""``repairbot settings``: every setting, read from the settings model itself.

``repairbot settings --markdown`` writes the table kept in ``docs/settings.md`` (a test checks
that the file is what the model says, so a setting is never undocumented or documented wrong).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from pydantic import SecretStr
from pydantic.fields import FieldInfo
from rich.console import Console
from rich.table import Table

from bot.config import Settings

ENV_PREFIX = "REPAIRBOT_"


def register(app: typer.Typer) -> None:
    """Add the ``settings`` command to the application."""
    app.command("settings")(settings_command)


def default_text(field: FieldInfo) -> str:
    """A field's default as documentation shows it (the same on every machine)."""
    if field.default_factory is not None:
        return "(computed, see description)"
    value: Any = field.default
    if isinstance(value, SecretStr):  # a public placeholder, refused outside development
        return f"{value.get_secret_value()} (development only)"
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


def rows() -> list[tuple[str, str, str]]:
    """``(variable, default, description)`` for every setting, in the model's order."""
    return [
        (f"{ENV_PREFIX}{name.upper()}", default_text(field), field.description or "")
        for name, field in Settings.model_fields.items()
    ]


def markdown() -> str:
    """The reference as the Markdown table of ``docs/settings.md``."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [
        "# Settings",
        "",
        "Every setting, generated from `bot/config.py` (`repairbot settings --markdown`; a test",
        "keeps this file equal to it). Each is read from the environment variable named here.",
        "",
        "| variable | default | what it is |",
        "|---|---|---|",
    ]
    lines += [f"| `{var}` | `{cell(default)}` | {cell(text)} |" for var, default, text in rows()]
    return "\n".join(lines) + "\n"


def settings_command(
    as_markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the Markdown table of docs/settings.md")
    ] = False,
) -> None:
    """List every setting: its environment variable, default and meaning."""
    if as_markdown:
        typer.echo(markdown(), nl=False)
        return
    table = Table("variable", "default", "what it is")
    for row in rows():
        table.add_row(*row)
    Console(emoji=False, highlight=False).print(table)
