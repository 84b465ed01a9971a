"""A command module dropped into ``bot.commands`` for one test, and nothing else edited.

``dropped_in`` writes the source into a temporary folder that joins the package's ``__path__``,
so discovery finds ``bot.commands.<name>`` exactly as it would find a new file in
``bot/commands/``; afterwards the package is as it was.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import bot.commands
from bot.commands.registry import forget

PING = '''
"""``/bot ping``: answer pong (a command that exists only in tests)."""

from __future__ import annotations

import argparse

from bot.commands.grammar import ParsedCommand
from bot.commands.registry import CommandContext, CommandSpec, Example, Permission


def configure(parser: argparse.ArgumentParser) -> None:
    """``ping``'s one option."""
    parser.add_argument("--times", type=int, default=1, help="how many pongs")


def handle(ctx: CommandContext, parsed: ParsedCommand) -> str:
    """Pong, as often as asked."""
    return " ".join(["pong"] * parsed.options["times"]) + f" for @{ctx.login}"


COMMAND = CommandSpec(
    name="ping",
    summary="answer pong",
    usage="/bot ping [--times N]",
    permission=Permission.WRITE,
    configure=configure,
    handle=handle,
    examples=(Example("/bot ping --times 2", "answers pong pong"),),
    order=50,
)
'''


@contextmanager
def dropped_in(folder: Path, source: str = PING, name: str = "ping") -> Iterator[str]:
    """``source`` as the module ``bot.commands.<name>`` while the block runs; yields its name."""
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    package = bot.commands
    saved = list(package.__path__)
    package.__path__.append(str(folder))
    importlib.invalidate_caches()
    forget()
    try:
        yield f"bot.commands.{name}"
    finally:
        package.__path__[:] = saved
        sys.modules.pop(f"bot.commands.{name}", None)
        if hasattr(package, name):
            delattr(package, name)
        forget()
