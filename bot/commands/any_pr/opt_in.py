"""``/repairbot opt-in``: the PR's author (or a maintainer) takes back ``/repairbot opt-out``.

The command's opt-out rows of the PR are lifted (who and when kept); an opt-out label, if the PR
carries it, still holds, and the reply says so.
"""

from __future__ import annotations

from bot.commands.any_pr.opt_out import label_note, own_fix_refusal
from bot.commands.grammar import ParsedCommand, no_options
from bot.commands.registry import CommandContext, CommandSpec, Example, Permission, Scope
from bot.db.records.opt_outs import OptOutVia, lift


def handle(ctx: CommandContext, parsed: ParsedCommand) -> str:
    """Lift the PR's command opt-out; say what still holds."""
    refused = own_fix_refusal(ctx)
    if refused is not None:
        return refused
    event = ctx.event
    lifted = lift(
        ctx.session,
        repository=event.repository,
        pr_number=event.number,
        via=OptOutVia.COMMAND,
        by=ctx.login,
    )
    still = label_note(ctx)
    if not lifted:
        return (
            f"Nothing to lift: #{event.number} was not opted out with `{ctx.prog} opt-out`.{still}"
        )
    who = ", ".join(sorted({row.opted_out_by for row in lifted}))
    if still:
        return f"Lifted the opt-out by {who}.{still}"
    return (
        f"Opted in again (the opt-out by {who} lifted): the next failure of #{event.number} "
        "is repaired."
    )


COMMAND = CommandSpec(
    name="opt-in",
    summary="take back /repairbot opt-out on this PR (the PR's author or a maintainer)",
    usage="/repairbot opt-in",
    permission=Permission.AUTHOR,
    configure=no_options,
    handle=handle,
    examples=(
        Example("/repairbot opt-in", "the PR's failures are repaired and commented on again"),
    ),
    needs_open_pr=False,
    order=81,
    scopes=(Scope.ANY_PR,),
)
