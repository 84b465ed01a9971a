"""The ``/bot`` commands: the spec each command module declares, and their discovery.

A module of ``bot.commands`` is a command when it defines a module-level ``COMMAND``, a
``CommandSpec``: the name, the argument grammar (``configure``, or a ``claim`` that sees the words
before argparse), the handler, and the help (summary, usage line, examples, who may use it).
``discover`` imports every module of the package with ``pkgutil`` and collects them; nothing is
listed by hand and nothing registers itself at import. The dispatch, the help reply and the
command tables in the docs all read the ``Registry`` it returns.
"""

from __future__ import annotations

import enum
import functools
import importlib
import pkgutil
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from sqlalchemy.orm import Session

from bot.commands.grammar import (
    PROG,
    Claim,
    CommandParser,
    Configure,
    ParsedCommand,
    Subcommand,
    build_parser,
    parse,
)
from bot.config import Settings
from bot.db.models import Fix
from bot.forges.base import Forge

PACKAGE = "bot.commands"
SPEC_ATTRIBUTE = "COMMAND"
NAME = re.compile(r"^[a-z][a-z0-9-]{0,39}$")


class Permission(enum.StrEnum):
    """Who may use a command, as the dispatch checks it."""

    ANYONE = "anyone"
    """Every commenter who is not a bot."""
    WRITE = "write"
    """``admin``/``write``/``maintain`` on the repository, or on ``github_command_users``."""


@dataclass(frozen=True)
class Example:
    """A command line and what it does: documentation, and a line that must parse."""

    line: str
    effect: str


@dataclass
class CommandContext:
    """What a handler may use: the transaction, settings, the fix PR, its forge, the author,
    and the registry the command came from."""

    session: Session
    settings: Settings
    fix: Fix
    forge: Forge
    login: str
    registry: Registry


Handler = Callable[[CommandContext, ParsedCommand], str]
"""Runs a parsed command and returns the reply posted on the PR."""


@dataclass(frozen=True)
class CommandSpec:
    """One ``/bot`` subcommand, declared as ``COMMAND`` in its own module.

    ``configure`` adds its options to its argparse subcommand; a command without one is not an
    argparse subcommand and is reached through ``claim`` only (``help``). ``usage`` is the line
    the docs show; it names exactly the options ``configure`` adds. ``permission`` and
    ``needs_open_pr`` are checked before ``handle`` runs; ``outcome`` is the audit outcome of a
    run. Commands are listed by ``order``, then name.
    """

    name: str
    summary: str
    usage: str
    permission: Permission
    handle: Handler
    configure: Configure | None = None
    claim: Claim | None = None
    examples: tuple[Example, ...] = ()
    needs_open_pr: bool = True
    outcome: str = "accepted"
    order: int = 100

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ValueError(f"{self.name!r} is not a command name (lowercase, digits, '-')")
        if self.configure is None and self.claim is None:
            raise ValueError(f"/bot {self.name} has neither options (configure) nor a claim")
        if self.usage != f"{PROG} {self.name}" and not self.usage.startswith(
            f"{PROG} {self.name} "
        ):
            raise ValueError(f"the usage of /bot {self.name} must start with its name")


class Registry:
    """The discovered commands, in ``order``; builds the parser and the help reply."""

    def __init__(self, specs: Iterable[CommandSpec]) -> None:
        ordered = sorted(specs, key=lambda spec: (spec.order, spec.name))
        self._specs: dict[str, CommandSpec] = {}
        for spec in ordered:
            if spec.name in self._specs:
                raise ValueError(f"/bot {spec.name} is declared twice")
            self._specs[spec.name] = spec
        self._parser: CommandParser | None = None

    def __iter__(self) -> Iterator[CommandSpec]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __getitem__(self, name: str) -> CommandSpec:
        return self._specs[name]

    @property
    def names(self) -> tuple[str, ...]:
        """Every command's name, in order."""
        return tuple(self._specs)

    def subcommands(self) -> tuple[CommandSpec, ...]:
        """The commands that are argparse subcommands (those with options), in order."""
        return tuple(spec for spec in self if spec.configure is not None)

    def parser(self) -> CommandParser:
        """The ``/bot`` parser of these commands (built once)."""
        if self._parser is None:
            self._parser = build_parser(
                [
                    Subcommand(spec.name, spec.summary, spec.configure)
                    for spec in self
                    if spec.configure is not None
                ],
                [spec.claim for spec in self if spec.claim is not None],
            )
        return self._parser

    def parse(self, line: str) -> ParsedCommand:
        """Parse one ``/bot`` line; raises ``CommandError`` with the message and usage."""
        return parse(line, self.parser())

    def help_text(self, for_command: str | None = None) -> str:
        """The reply to ``/bot help`` (or ``/bot CMD -h``): usage plus each command's help."""
        root = self.parser()
        if for_command in root.children:
            return "```\n" + root.children[for_command].format_help().strip() + "\n```"
        lines = [root.format_usage().strip(), ""]
        lines += [f"- `{PROG} {spec.name}`: {spec.summary}" for spec in self.subcommands()]
        lines += ["", f"`{PROG} COMMAND -h` shows a command's options."]
        return "```\n" + lines[0] + "\n```\n" + "\n".join(lines[1:])


def _specs_in(package_name: str) -> Iterator[CommandSpec]:
    package = importlib.import_module(package_name)
    for info in pkgutil.iter_modules(package.__path__, package_name + "."):
        if info.name.rpartition(".")[2].startswith("_"):
            continue
        spec = getattr(importlib.import_module(info.name), SPEC_ATTRIBUTE, None)
        if spec is None:
            continue
        if not isinstance(spec, CommandSpec):
            raise TypeError(f"{info.name}.{SPEC_ATTRIBUTE} is a {type(spec).__name__}")
        yield spec


@functools.cache
def _discover(packages: tuple[str, ...]) -> Registry:
    return Registry(spec for name in packages for spec in _specs_in(name))


def discover(*packages: str) -> Registry:
    """The commands declared by the modules of ``packages`` (default ``bot.commands``).

    Cached per package list; ``forget`` clears the cache (a test that adds a module).
    """
    return _discover(packages or (PACKAGE,))


def forget() -> None:
    """Forget what ``discover`` found: the next call imports and collects again."""
    _discover.cache_clear()


def registry() -> Registry:
    """The commands of ``bot.commands``."""
    return discover()


def parser() -> CommandParser:
    """The parser of every command of ``bot.commands``."""
    return registry().parser()


def help_text(for_command: str | None = None) -> str:
    """The help reply for ``bot.commands``: see ``Registry.help_text``."""
    return registry().help_text(for_command)
