"""``/bot kill``: stop this PR's queued and running verifications."""

from __future__ import annotations

from bot.commands.grammar import ParsedCommand, no_options
from bot.commands.registry import CommandContext, CommandSpec, Example, Permission
from bot.runner.requests import cancel_verifications


def handle(ctx: CommandContext, parsed: ParsedCommand) -> str:
    """Cancel every active verification of the fix."""
    cancelled = cancel_verifications(
        ctx.session, fix_id=ctx.fix_pr.id, reason=f"/bot kill by {ctx.login}"
    )
    if not cancelled:
        return "Nothing to stop: no verification of this PR is queued or running."
    return "Stopped " + ", ".join(f"verification #{v.id}" for v in cancelled) + "."


COMMAND = CommandSpec(
    name="kill",
    summary="stop this PR's queued and running verifications",
    usage="/bot kill",
    permission=Permission.WRITE,
    configure=no_options,
    handle=handle,
    examples=(Example("/bot kill", "cancels this PR's queued and running verifications"),),
    order=20,
)
