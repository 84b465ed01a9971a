"""``/bot skip --comment "reason"``: mark verification as passed without running it.

The reason is required, whitespace-normalised and capped; it goes into the commit status.
"""

from __future__ import annotations

import argparse

from bot.commands.grammar import ParsedCommand
from bot.commands.registry import CommandContext, CommandSpec, Example, Permission
from bot.runner.pr_summary import STATUS_CONTEXT

MAX_REASON_CHARS = 500


def _reason(text: str) -> str:
    reason = " ".join(text.split())
    if not reason:
        raise argparse.ArgumentTypeError("the reason must not be empty")
    if len(reason) > MAX_REASON_CHARS:
        raise argparse.ArgumentTypeError(f"the reason is over {MAX_REASON_CHARS} characters")
    return reason


def configure(parser: argparse.ArgumentParser) -> None:
    """``skip``'s one (required) option."""
    parser.add_argument("--comment", required=True, type=_reason, help="why the run is skipped")


def handle(ctx: CommandContext, parsed: ParsedCommand) -> str:
    """Record the reason and set our status to success, saying it was skipped and why."""
    reason = str(parsed.options["comment"])
    ctx.forge.set_status(
        ctx.session,
        ctx.fix_pr,
        state="success",
        context=STATUS_CONTEXT,
        description=f"skipped: {reason}",
    )
    return f"`{STATUS_CONTEXT}` marked successful without a run, by @{ctx.login}: {reason}"


COMMAND = CommandSpec(
    name="skip",
    summary='mark verification as passed without running it: --comment "reason"',
    usage='/bot skip --comment "reason"',
    permission=Permission.WRITE,
    configure=configure,
    handle=handle,
    examples=(
        Example(
            '/bot skip --comment "runner pool down, checked by hand"',
            'status `repairbot/verify` = success, "skipped: ..."',
        ),
    ),
    order=30,
)
