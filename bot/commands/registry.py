"""The commands: the spec each command module declares, and their discovery.

A module of ``bot.commands`` (or of a package in it) is a command when it defines a module-level
``COMMAND``, a ``CommandSpec``: the name, the argument grammar (``configure``, or a ``claim`` that
sees the words before argparse), the handler, the help (summary, usage line, examples, who may use
it) and its scopes: ``fix-pr`` commands are written ``/bot ...`` (TensorRT-LLM's CI grammar) and
read on repairbot's fix PRs only; ``any-pr`` commands are written with repairbot's own prefix
(``Settings.command_prefix``, default ``/repairbot``) and read on any PR. One registry holds both,
with one argparse tree per scope. ``discover`` imports every module of the package and its
subpackages with ``pkgutil`` and collects them; nothing is listed by hand and nothing registers
itself at import.
The dispatch, the help reply and the command tables in the docs all read the ``Registry`` it
returns.
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
    DEFAULT_PREFIX,
    PROG,
    Claim,
    CommandParser,
    Configure,
    ParsedCommand,
    Subcommand,
    build_parser,
    parse,
    prog_of,
)
from bot.config import Settings
from bot.db.models import CommandInvocation, Fix
from bot.forges.base import Forge
from bot.forges.github.events import CommentEvent

PACKAGE = "bot.commands"
SPEC_ATTRIBUTE = "COMMAND"
NAME = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
QUEUED = "queued"
"""The outcome of a command whose work runs in a task, which replies when done."""


class Scope(enum.StrEnum):
    """Where a command is read, and under which prefix."""

    FIX_PR = "fix-pr"
    """``/bot ...`` on repairbot's own fix PRs (beside TensorRT-LLM's CI bot elsewhere)."""
    ANY_PR = "any-pr"
    """repairbot's prefix (``Settings.command_prefix``) on any PR of the repository."""


DOCUMENTED_PROG = {Scope.FIX_PR: PROG, Scope.ANY_PR: DEFAULT_PREFIX}
"""The prefix each scope's usage lines and examples are written with."""


def prog_for(scope: Scope, prefix: str = DEFAULT_PREFIX) -> str:
    """The prefix a scope's commands start with, given repairbot's configured ``prefix``."""
    return PROG if scope is Scope.FIX_PR else prefix


class Permission(enum.StrEnum):
    """Who may use a command, as the dispatch checks it."""

    ANYONE = "anyone"
    """Every commenter who is not a bot."""
    WRITE = "write"
    """``admin``/``write``/``maintain`` on the repository, or on ``github_command_users``."""
    AUTHOR = "author or write"
    """The PR's author, or anyone ``WRITE`` allows."""


@dataclass(frozen=True)
class Example:
    """A command line and what it does: documentation, and a line that must parse."""

    line: str
    effect: str


@dataclass
class CommandContext:
    """What a handler may use: the transaction, settings, the PR's fix (None: not one of ours),
    the forge, the author, the registry the command came from, the scope it was read in, the
    comment, and its audit row (flushed: a queued command's task takes its id)."""

    session: Session
    settings: Settings
    fix: Fix | None
    forge: Forge
    login: str
    registry: Registry
    scope: Scope
    event: CommentEvent
    invocation: CommandInvocation

    @property
    def fix_pr(self) -> Fix:
        """The fix PR a ``fix-pr`` command runs on (the dispatch reads those on fix PRs only)."""
        if self.fix is None:
            raise LookupError(f"{self.event.repository}#{self.event.number} is not a fix PR")
        return self.fix

    @property
    def prog(self) -> str:
        """The prefix the command was written with."""
        return prog_for(self.scope, self.settings.command_prefix)


Handler = Callable[[CommandContext, ParsedCommand], str]
"""Runs a parsed command and returns the reply posted on the PR."""


@dataclass(frozen=True)
class CommandSpec:
    """One subcommand, declared as ``COMMAND`` in its own module.

    ``configure`` adds its options to its argparse subcommand; a command without one is not an
    argparse subcommand and is reached through ``claim`` only (``help``). ``usage`` is the line
    the docs show, under the documented prefix of its first scope; it names exactly the options
    ``configure`` adds. ``permission`` and ``needs_open_pr`` (the fix PR is open) are checked
    before ``handle`` runs; ``outcome`` is the audit outcome of a run (``queued``: a task
    replies later). ``scopes``: where it is read (``Scope``). Commands are listed by ``order``,
    then name.
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
    scopes: tuple[Scope, ...] = (Scope.FIX_PR,)

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ValueError(f"{self.name!r} is not a command name (lowercase, digits, '-')")
        if not self.scopes:
            raise ValueError(f"{self.name} is read nowhere: give it a scope")
        if self.configure is None and self.claim is None:
            raise ValueError(f"{self.documented} has neither options (configure) nor a claim")
        if self.usage != self.documented and not self.usage.startswith(f"{self.documented} "):
            raise ValueError(f"the usage of {self.documented} must start with its name")

    @property
    def documented(self) -> str:
        """The command as the docs write it: ``/bot run``, ``/repairbot apply-fix``."""
        return f"{DOCUMENTED_PROG[self.scopes[0]]} {self.name}"


class Registry:
    """The discovered commands, in ``order``; builds each scope's parser and help reply."""

    def __init__(self, specs: Iterable[CommandSpec]) -> None:
        ordered = sorted(specs, key=lambda spec: (spec.order, spec.name))
        self._specs: dict[str, CommandSpec] = {}
        for spec in ordered:
            if spec.name in self._specs:
                raise ValueError(f"{spec.documented} is declared twice")
            self._specs[spec.name] = spec
        self._parsers: dict[tuple[Scope, str], CommandParser] = {}

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

    def in_scope(self, scope: Scope) -> tuple[CommandSpec, ...]:
        """The commands read in ``scope``, in order."""
        return tuple(spec for spec in self if scope in spec.scopes)

    def subcommands(self, scope: Scope = Scope.FIX_PR) -> tuple[CommandSpec, ...]:
        """The commands of ``scope`` that are argparse subcommands (those with options)."""
        return tuple(spec for spec in self.in_scope(scope) if spec.configure is not None)

    def parser(self, scope: Scope = Scope.FIX_PR, prefix: str = DEFAULT_PREFIX) -> CommandParser:
        """The parser of ``scope``'s commands under its prefix (built once per prefix)."""
        prog = prog_for(scope, prefix)
        if (scope, prog) not in self._parsers:
            specs = self.in_scope(scope)
            self._parsers[(scope, prog)] = build_parser(
                [Subcommand(s.name, s.summary, s.configure) for s in specs if s.configure],
                [spec.claim for spec in specs if spec.claim is not None],
                prog=prog,
            )
        return self._parsers[(scope, prog)]

    def scope_of(self, line: str, prefix: str = DEFAULT_PREFIX) -> Scope:
        """The scope a command line is written in: repairbot's ``prefix``, else ``/bot``."""
        return Scope.ANY_PR if prog_of(line, (prefix,)) else Scope.FIX_PR

    def parse(self, line: str, prefix: str = DEFAULT_PREFIX) -> ParsedCommand:
        """Parse one line (``/bot ...`` or ``prefix ...``); raises ``CommandError`` with the
        message and usage."""
        return parse(line, self.parser(self.scope_of(line, prefix), prefix))

    def help_text(
        self,
        for_command: str | None = None,
        scope: Scope = Scope.FIX_PR,
        prefix: str = DEFAULT_PREFIX,
    ) -> str:
        """The reply to ``help`` (or ``CMD -h``) in ``scope``: usage plus each command's help."""
        root = self.parser(scope, prefix)
        if for_command in root.children:
            return "```\n" + root.children[for_command].format_help().strip() + "\n```"
        prog = prog_for(scope, prefix)
        lines = [root.format_usage().strip(), ""]
        lines += [f"- `{prog} {spec.name}`: {spec.summary}" for spec in self.subcommands(scope)]
        lines += ["", f"`{prog} COMMAND -h` shows a command's options."]
        if scope is Scope.FIX_PR and self.subcommands(Scope.ANY_PR):
            lines.append(f"`{prefix} help` lists repairbot's own commands, read on any PR.")
        return "```\n" + lines[0] + "\n```\n" + "\n".join(lines[1:])


def _specs_in(package_name: str) -> Iterator[CommandSpec]:
    package = importlib.import_module(package_name)
    for info in pkgutil.walk_packages(package.__path__, package_name + "."):
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


def parser(scope: Scope = Scope.FIX_PR) -> CommandParser:
    """The parser of ``scope``'s commands of ``bot.commands`` (default: the ``/bot`` ones)."""
    return registry().parser(scope)


def help_text(for_command: str | None = None, scope: Scope = Scope.FIX_PR) -> str:
    """The help reply for ``bot.commands``: see ``Registry.help_text``."""
    return registry().help_text(for_command, scope)
