"""``/repairbot opt-out``: the PR's author (or a maintainer) asks the bot to leave the PR alone.

Recorded as a row (``bot.db.records.opt_outs``, who and when): from then on the PR's failures open
no fix run, and the bot posts no review, comment or check on it, until ``/repairbot opt-in``. On one
of repairbot's own fix PRs it is refused: closing that PR is how a human says no to it.
"""

from __future__ import annotations

from bot.commands.grammar import ParsedCommand, no_options
from bot.commands.registry import CommandContext, CommandSpec, Example, Permission, Scope
from bot.db.records.opt_outs import OptOutVia, active_opt_outs, opt_out

LEFT_ALONE = "no fix runs, reviews, comments or checks for its failures and events"


def own_fix_refusal(ctx: CommandContext) -> str | None:
    """Why opting this PR in or out makes no sense (it is one of our fix PRs), or None."""
    if ctx.fix is None:
        return None
    return (
        f"Not opting out: this is repairbot's own fix PR (fix #{ctx.fix.id}); close it to "
        "decline the fix, and its violations open no PR again until a maintainer lifts that."
    )


def label_note(ctx: CommandContext) -> str:
    """A sentence about the opt-out label, when it keeps the PR opted out ('' when it does not)."""
    event = ctx.event
    rows = active_opt_outs(ctx.session, repository=event.repository, pr_number=event.number)
    if not any(row.via == OptOutVia.LABEL.value for row in rows):
        return ""
    return f" The `{ctx.settings.opt_out_label}` label opts it out too, until it is removed."


def handle(ctx: CommandContext, parsed: ParsedCommand) -> str:
    """Record the opt-out of the PR (once: a second one says who did it first)."""
    refused = own_fix_refusal(ctx)
    if refused is not None:
        return refused
    event = ctx.event
    row, new = opt_out(
        ctx.session,
        repository=event.repository,
        pr_number=event.number,
        via=OptOutVia.COMMAND,
        by=ctx.login,
    )
    if not new:
        return f"Already opted out: {row.describe()}."
    return (
        f"Opted out: repairbot leaves #{event.number} alone ({LEFT_ALONE}) until "
        f"`{ctx.prog} opt-in`. Recorded for @{ctx.login}."
    )


COMMAND = CommandSpec(
    name="opt-out",
    summary=(
        "leave this PR alone: no fix runs, reviews, comments or checks for it, until opt-in "
        "(the PR's author or a maintainer)"
    ),
    usage="/repairbot opt-out",
    permission=Permission.AUTHOR,
    configure=no_options,
    handle=handle,
    examples=(
        Example("/repairbot opt-out", "the PR's next failures open nothing and get no comment"),
    ),
    needs_open_pr=False,
    order=80,
    scopes=(Scope.ANY_PR,),
)
