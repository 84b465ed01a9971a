"""The shared command grammar: argparse over shlex, never a shell, under a prefix (``prog``).

Two prefixes use it: ``/bot`` (TensorRT-LLM's CI bot, read on repairbot's fix PRs) and
repairbot's own, configurable prefix (default ``/repairbot``, read on any PR). This module knows
no subcommand. ``find_command`` picks the first line starting with one of the prefixes out of a
comment; ``parse`` checks and splits it, offers the words to each command's ``claim`` (``help``
claims ``/bot``, ``/bot -h``, ``/bot CMD -h``), then hands them to the argparse tree that
``build_parser`` built from every command's own ``configure``. A bad line raises
``CommandError``, whose message and usage go back to the commenter. ``listed`` is the shared
argparse type for comma-separated values matched against a narrow pattern, so nothing a comment
says can become more than a name from a small alphabet.
"""

from __future__ import annotations

import argparse
import re
import shlex
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

PROG = "/bot"
DEFAULT_PREFIX = "/repairbot"  # ``Settings.command_prefix``'s default: what the docs show
MAX_COMMAND_CHARS = 1000
MAX_LIST_ITEMS = 50
HELP_FLAGS = ("-h", "--help")


class CommandError(ValueError):
    """A command line that cannot run; ``usage`` is the usage of the command it addressed."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


@dataclass(frozen=True)
class ParsedCommand:
    """A valid command: its name (``help`` included) and its options as plain data."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    help_for: str | None = None


Configure = Callable[[argparse.ArgumentParser], None]
"""Adds one subcommand's options to its argparse parser."""

Claim = Callable[[Sequence[str], frozenset[str]], ParsedCommand | None]
"""Given the words after the prefix and the subcommand names, the command's parse, or None."""


@dataclass(frozen=True)
class Subcommand:
    """What the argparse tree needs of one subcommand: its name, one-line help and options."""

    name: str
    help: str
    configure: Configure


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of printing and exiting."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.children: dict[str, CommandParser] = {}
        self.claims: tuple[Claim, ...] = ()

    def error(self, message: str) -> NoReturn:
        """Raise ``CommandError`` with argparse's message and this parser's usage."""
        raise CommandError(message, self.format_usage().strip())

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        """Raise ``CommandError``: a comment never ends the process."""
        raise CommandError(message or "exit requested", self.format_usage().strip())


def listed(pattern: re.Pattern[str], what: str) -> Callable[[str], list[str]]:
    """An argparse type: a comma-separated list whose items all match ``pattern``."""

    def convert(text: str) -> list[str]:
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"empty {what} list")
        if len(items) > MAX_LIST_ITEMS:
            raise argparse.ArgumentTypeError(f"at most {MAX_LIST_ITEMS} {what}s")
        bad = [item for item in items if not pattern.match(item)]
        if bad:
            raise argparse.ArgumentTypeError(
                f"invalid {what} {bad[0][:60]!r} (letters, digits, '_', '-', '.' only)"
            )
        return items

    convert.__name__ = what
    return convert


def no_options(parser: argparse.ArgumentParser) -> None:
    """The ``configure`` of a command without options."""


def build_parser(
    commands: Sequence[Subcommand], claims: Sequence[Claim] = (), prog: str = PROG
) -> CommandParser:
    """The parser of ``prog``: one argparse subcommand per entry, ``claims`` tried before them."""
    parser = CommandParser(
        prog=prog, add_help=False, allow_abbrev=False, description="repairbot commands"
    )
    parser.add_argument(*HELP_FLAGS, action="store_true", help="show this help")
    sub = parser.add_subparsers(
        dest="command", metavar="{" + ",".join(c.name for c in commands) + "}"
    )
    for command in commands:
        child = sub.add_parser(
            command.name,
            help=command.help,
            description=command.help,
            add_help=False,
            allow_abbrev=False,
        )
        child.add_argument(*HELP_FLAGS, action="store_true", help="show this help")
        command.configure(child)
        parser.children[command.name] = child
    parser.claims = tuple(claims)
    return parser


def prog_of(line: str, progs: Sequence[str]) -> str | None:
    """The prefix of ``progs`` that a stripped line is a command of (``/bot``, ``/bot run``, not
    ``/botany``), or None."""
    for prog in progs:
        if line == prog or line.startswith((prog + " ", prog + "\t")):
            return prog
    return None


_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_INDENT = 4  # CommonMark: four columns of indentation make a code block


def _indentation(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip(" "))


def _closes(found: re.Match[str], fence: str) -> bool:
    """Whether a fence line closes a block opened by ``fence``: the same character, at least as
    many, and nothing after it."""
    closing = found["fence"]
    return closing[0] == fence[0] and len(closing) >= len(fence) and not found["info"].strip()


def plain_lines(body: str) -> Iterator[str]:
    """The lines of a Markdown comment that are plain text, stripped: not inside a fenced
    code block (to its closing fence, or the end), not indented as code (four columns or
    more), not a block quote (``>``), not inside an HTML comment. Quoting a command, or
    showing one in a code block, never runs it."""
    fence: str | None = None
    in_comment = False
    for line in body.splitlines():
        if in_comment:
            in_comment = "-->" not in line
            continue
        opening = _FENCE.match(line)
        if fence is not None:
            if opening and _closes(opening, fence):
                fence = None
            continue
        if opening and not (opening["fence"][0] == "`" and "`" in opening["info"]):
            fence = opening["fence"]
            continue
        stripped = line.strip()
        if stripped.startswith("<!--"):
            in_comment = "-->" not in stripped[4:]
            continue
        if _indentation(line) >= _INDENT or stripped.startswith(">"):
            continue
        yield stripped


def find_command(body: str, progs: Sequence[str] = (PROG,)) -> str | None:
    """The first plain-text line of a comment (``plain_lines``) that is a command of one of
    ``progs``, or None."""
    for line in plain_lines(body):
        if prog_of(line, progs) is not None:
            return line
    return None


def _check_text(line: str, usage: str) -> None:
    if len(line) > MAX_COMMAND_CHARS:
        raise CommandError(
            f"the command is {len(line)} characters long; at most {MAX_COMMAND_CHARS} are read",
            usage,
        )
    for column, char in enumerate(line, start=1):
        if unicodedata.category(char) in ("Cc", "Cf", "Co", "Cs") and char != "\t":
            raise CommandError(
                f"invisible or control character U+{ord(char):04X} at column {column}", usage
            )


def split(line: str, usage: str) -> list[str]:
    """The words after the prefix: the line checked (length, invisible characters) and split."""
    _check_text(line, usage)
    try:
        words = shlex.split(line, comments=False, posix=True)
    except ValueError as exc:
        raise CommandError(f"cannot split the command: {exc} (unbalanced quotes?)", usage) from exc
    return words[1:]


def _claimed(parser: CommandParser, args: Sequence[str]) -> ParsedCommand | None:
    names = frozenset(parser.children)
    for claim in parser.claims:
        parsed = claim(args, names)
        if parsed is not None:
            return parsed
    return None


def parse(line: str, parser: CommandParser) -> ParsedCommand:
    """Parse one command line; raises ``CommandError`` with the message and usage."""
    usage = parser.format_usage().strip()
    args = split(line, usage)
    claimed = _claimed(parser, args)
    if claimed is not None:
        return claimed
    namespace = parser.parse_args(args)
    options = {k: v for k, v in vars(namespace).items() if k not in ("command", "help")}
    if namespace.help:  # a help flag the claims did not see, such as ``-hh``
        flag_and_command = [HELP_FLAGS[0]] + ([namespace.command] if namespace.command else [])
        claimed = _claimed(parser, flag_and_command)
        if claimed is not None:
            return claimed
    if namespace.command is None:
        raise CommandError("name a command", usage)
    return ParsedCommand(namespace.command, options)
