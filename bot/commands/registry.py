"""The command registry: each ``/bot`` subcommand registers its handler with its help text."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from bot.commands.grammar import CommandParser, build_parser, configure_none
from bot.config import Settings
from bot.db.models import Fix
from bot.forge.base import Forge


@dataclass
class CommandContext:
    """What a handler may use: the transaction, settings, the fix PR, its forge, the author."""

    session: Session
    settings: Settings
    fix: Fix
    forge: Forge
    login: str


Handler = Callable[[CommandContext, dict[str, Any]], str]
Configure = Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, help text, options and handler (which returns the reply)."""

    name: str
    help: str
    configure: Configure
    handle: Handler


REGISTRY: dict[str, Command] = {}


def command(
    name: str, help: str, configure: Configure = configure_none
) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of ``/bot name``."""

    def register(handler: Handler) -> Handler:
        if name in REGISTRY:
            raise ValueError(f"/bot {name} is registered twice")
        REGISTRY[name] = Command(name, help, configure, handler)
        return handler

    return register


def parser() -> CommandParser:
    """The parser of every registered command."""
    return build_parser([(c.name, c.help, c.configure) for c in REGISTRY.values()])


def help_text(for_command: str | None = None) -> str:
    """The reply to ``/bot help`` (or ``/bot CMD -h``): usage plus each command's help."""
    root = parser()
    if for_command in root.children:
        return "```\n" + root.children[for_command].format_help().strip() + "\n```"
    lines = [root.format_usage().strip(), ""]
    lines += [f"- `/bot {c.name}`: {c.help}" for c in REGISTRY.values()]
    lines += ["", "`/bot COMMAND -h` shows a command's options."]
    return "```\n" + lines[0] + "\n```\n" + "\n".join(lines[1:])
