"""The ``/bot`` grammar (TensorRT-LLM's CI bot): argparse over shlex, never a shell.

``find_command`` picks the ``/bot`` line out of a comment; ``parse`` turns it into a
``ParsedCommand`` or raises ``CommandError`` whose message and usage go back to the commenter.
Every value is checked against a narrow pattern, so nothing a comment says can become more
than a stage name, a GPU type, a backend name, a pipeline number or a quoted reason.
"""

from __future__ import annotations

import argparse
import re
import shlex
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

PROG = "/bot"
MAX_COMMAND_CHARS = 1000
MAX_LIST_ITEMS = 50
MAX_REASON_CHARS = 500
STAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
GPU = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]{0,39}$")
BACKEND = re.compile(r"^[a-z][a-z0-9_]{0,19}$")
HELP_WORDS = frozenset({"help", "-h", "--help"})


class CommandError(ValueError):
    """A ``/bot`` line that cannot run; ``usage`` is the usage of the command it addressed."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


@dataclass(frozen=True)
class ParsedCommand:
    """A valid command: its name (``help`` included) and its options as plain data."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    help_for: str | None = None


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of printing and exiting."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.children: dict[str, CommandParser] = {}

    def error(self, message: str) -> NoReturn:
        raise CommandError(message, self.format_usage().strip())

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise CommandError(message or "exit requested", self.format_usage().strip())


def _listed(pattern: re.Pattern[str], what: str) -> Callable[[str], list[str]]:
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


def _pipeline_id(text: str) -> int | str:
    if text == "latest":  # the flag without a value: the latest pipeline
        return text
    if not text.isdigit() or len(text) > 12:
        raise argparse.ArgumentTypeError(f"pipeline id must be a number, not {text[:40]!r}")
    return int(text)


def _reason(text: str) -> str:
    reason = " ".join(text.split())
    if not reason:
        raise argparse.ArgumentTypeError("the reason must not be empty")
    if len(reason) > MAX_REASON_CHARS:
        raise argparse.ArgumentTypeError(f"the reason is over {MAX_REASON_CHARS} characters")
    return reason


def configure_run(parser: argparse.ArgumentParser) -> None:
    """``run``'s options, as in DESIGN §4."""
    reuse = parser.add_mutually_exclusive_group()
    reuse.add_argument(
        "--reuse-test",
        nargs="?",
        const="latest",
        type=_pipeline_id,
        metavar="PIPELINE_ID",
        help="reuse passed tests (of PIPELINE_ID)",
    )
    reuse.add_argument("--disable-reuse-test", action="store_true", help="rerun every test")
    parser.add_argument("--disable-fail-fast", action="store_true", help="run on after a failure")
    parser.add_argument("--skip-test", action="store_true", help="build only, run no test")
    parser.add_argument(
        "--stage-list",
        type=_listed(STAGE, "stage"),
        help='only these stages: "A10-PyTorch-1, H100_PCIe-PyTorch-2"',
    )
    parser.add_argument(
        "--gpu-type", type=_listed(GPU, "GPU type"), help='only these GPU types: "A30, H100_PCIe"'
    )
    parser.add_argument(
        "--test-backend",
        type=_listed(BACKEND, "backend"),
        help='only these backends: "pytorch, cpp"',
    )
    multi = parser.add_mutually_exclusive_group()
    multi.add_argument("--add-multi-gpu-test", action="store_true", help="add multi-GPU stages")
    multi.add_argument("--only-multi-gpu-test", action="store_true", help="multi-GPU stages only")
    multi.add_argument("--disable-multi-gpu-test", action="store_true", help="no multi-GPU stage")
    parser.add_argument("--post-merge", action="store_true", help="run the post-merge stages")
    parser.add_argument(
        "--extra-stage", type=_listed(STAGE, "stage"), help="add these stages to the default set"
    )
    parser.add_argument("--detailed-log", action="store_true", help="verbose test logs")
    parser.add_argument("--debug", action="store_true", help="debug mode")


def configure_skip(parser: argparse.ArgumentParser) -> None:
    """``skip``'s one (required) option."""
    parser.add_argument("--comment", required=True, type=_reason, help="why the run is skipped")


def configure_none(parser: argparse.ArgumentParser) -> None:
    """A command without options."""


def build_parser(
    commands: list[tuple[str, str, Callable[[argparse.ArgumentParser], None]]],
) -> CommandParser:
    """The ``/bot`` parser for ``(name, help, configure)`` commands."""
    parser = CommandParser(
        prog=PROG, add_help=False, allow_abbrev=False, description="repairbot commands"
    )
    parser.add_argument("-h", "--help", action="store_true", help="show this help")
    sub = parser.add_subparsers(
        dest="command", metavar="{" + ",".join(n for n, _, _ in commands) + "}"
    )
    for name, help_text, configure in commands:
        child = sub.add_parser(
            name, help=help_text, description=help_text, add_help=False, allow_abbrev=False
        )
        child.add_argument("-h", "--help", action="store_true", help="show this help")
        configure(child)
        parser.children[name] = child
    return parser


def find_command(body: str) -> str | None:
    """The first line of a comment that is a ``/bot`` command, or None."""
    for line in body.splitlines():
        stripped = line.strip()
        if stripped == PROG or stripped.startswith(PROG + " ") or stripped.startswith(PROG + "\t"):
            return stripped
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


def parse(line: str, parser: CommandParser) -> ParsedCommand:
    """Parse one ``/bot`` line; raises ``CommandError`` with the message and usage."""
    usage = parser.format_usage().strip()
    _check_text(line, usage)
    try:
        words = shlex.split(line, comments=False, posix=True)
    except ValueError as exc:
        raise CommandError(f"cannot split the command: {exc} (unbalanced quotes?)", usage) from exc
    args = words[1:]
    if not args or args[0] in HELP_WORDS:
        return ParsedCommand("help", help_for=args[1] if len(args) > 1 else None)
    if args[0] in parser.children and {"-h", "--help"} & set(args[1:]):
        return ParsedCommand("help", help_for=args[0])
    namespace = parser.parse_args(args)
    options = {k: v for k, v in vars(namespace).items() if k not in ("command", "help")}
    if namespace.help:
        return ParsedCommand("help", help_for=namespace.command)
    if namespace.command is None:
        raise CommandError("name a command", usage)
    return ParsedCommand(namespace.command, options)
