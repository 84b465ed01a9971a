"""``/repairbot unsuppress``: a maintainer takes back the decision that holds a fix's violations.

Written on one of our fix PRs that a human closed unmerged (or whose merge was reverted): the
suppression (``bot.db.records.suppressions``) is lifted, audited with who and when, and the latest
failure it held back is repaired again at once, so one new PR follows.
"""

from __future__ import annotations

from sqlalchemy import select

from bot.commands.grammar import ParsedCommand, no_options
from bot.commands.registry import CommandContext, CommandSpec, Example, Permission, Scope
from bot.db.crud import release_held_run
from bot.db.models import RepairRun, RunState
from bot.db.records.suppressions import lift_suppressions
from bot.queue.starts import start_repair


def handle(ctx: CommandContext, parsed: ParsedCommand) -> str:
    """Lift what holds this fix's violations and repair the latest failure it held."""
    if ctx.fix is None:
        return "Nothing to lift: this PR is not one of repairbot's fix PRs."
    fix = ctx.fix
    lifted = lift_suppressions(ctx.session, fix=fix, lifted_by=ctx.login)
    if not lifted:
        return f"Nothing to lift: no suppression holds the violations of fix #{fix.id}."
    held = ctx.session.scalar(
        select(RepairRun)
        .where(RepairRun.fix_id == fix.id, RepairRun.state == RunState.SUPPRESSED.value)
        .order_by(RepairRun.id.desc())
    )
    decided = ", ".join(f"{row.reason.replace('_', ' ')} by {row.decided_by}" for row in lifted)
    if held is None:
        return (
            f"Lifted ({decided}) by @{ctx.login}; the next failure of these violations opens a PR."
        )
    release_held_run(ctx.session, run=held, reason=f"suppression lifted by {ctx.login}")
    start_repair(ctx.session, held.id)
    return f"Lifted ({decided}) by @{ctx.login}; repairing run {held.id} again: a new PR follows."


COMMAND = CommandSpec(
    name="unsuppress",
    summary=(
        "lift the suppression a closed (or reverted) fix PR put on its violations, and repair "
        "the latest failure it held back"
    ),
    usage="/repairbot unsuppress",
    permission=Permission.WRITE,
    configure=no_options,
    handle=handle,
    examples=(
        Example(
            "/repairbot unsuppress",
            "the closed fix's violations may open a PR again; the latest held failure is repaired",
        ),
    ),
    needs_open_pr=False,  # it is written on a closed fix PR
    order=70,
    scopes=(Scope.ANY_PR,),
)
