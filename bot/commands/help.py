"""``help``: the commands and their options, for anyone, per prefix.

``/bot help`` on our fix PRs lists the ``/bot`` commands; ``/repairbot help`` (the configured
prefix) on any PR lists repairbot's own. Not an argparse subcommand (the usage stays
``{run,kill,skip,...}``): it claims the prefix alone, ``help [COMMAND]``, ``-h``/``--help
[COMMAND]`` and ``COMMAND ... -h``.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.commands.grammar import HELP_FLAGS, ParsedCommand
from bot.commands.registry import CommandContext, CommandSpec, Example, Permission, Scope

NAME = "help"
HELP_WORDS = frozenset({NAME, *HELP_FLAGS})


def claim(args: Sequence[str], subcommands: frozenset[str]) -> ParsedCommand | None:
    """A help request, or None: the first word asks for help, or a command's words hold -h."""
    if not args or args[0] in HELP_WORDS:
        return ParsedCommand(NAME, help_for=args[1] if len(args) > 1 else None)
    if args[0] in subcommands and set(HELP_FLAGS) & set(args[1:]):
        return ParsedCommand(NAME, help_for=args[0])
    return None


def handle(ctx: CommandContext, parsed: ParsedCommand) -> str:
    """The usage and every command's summary in the command's scope, or one command's options."""
    return ctx.registry.help_text(parsed.help_for, ctx.scope, ctx.settings.command_prefix)


COMMAND = CommandSpec(
    name=NAME,
    summary="list the commands, or show one command's options",
    usage="/bot help [COMMAND]",
    permission=Permission.ANYONE,
    claim=claim,
    handle=handle,
    examples=(
        Example("/bot help", "the usage and every command (also `/bot`, `/bot -h`)"),
        Example("/bot run -h", "`run`'s options (also `/bot help run`)"),
        Example("/repairbot help", "repairbot's own commands, on any PR (also `/repairbot`)"),
    ),
    needs_open_pr=False,
    outcome="help",
    order=90,
    scopes=(Scope.FIX_PR, Scope.ANY_PR),
)
