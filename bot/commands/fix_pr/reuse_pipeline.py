"""``/bot reuse-pipeline``: report the last verification again if the PR head is unchanged."""

from __future__ import annotations

from bot.commands.grammar import ParsedCommand, no_options
from bot.commands.registry import CommandContext, CommandSpec, Example, Permission
from bot.db.models import Verdict, VerificationState
from bot.runner.pr_summary import STATUS_CONTEXT
from bot.runner.requests import latest_verification


def handle(ctx: CommandContext, parsed: ParsedCommand) -> str:
    """Reuse the newest verification when it verified the current head."""
    last = latest_verification(ctx.session, fix_id=ctx.fix_pr.id)
    if last is None:
        return "Nothing to reuse: this PR has no verification yet. Use `/bot run`."
    verified = str(last.results.get("head_sha") or "")
    if last.state != VerificationState.DONE.value:
        return f"Verification #{last.id} is {last.state}; nothing finished to reuse."
    if verified != ctx.fix_pr.head_sha:
        return (
            f"Cannot reuse verification #{last.id}: it verified `{verified[:12] or 'unknown'}`, "
            f"the head is now `{ctx.fix_pr.head_sha[:12]}`. Use `/bot run`."
        )
    passed = last.verdict == Verdict.FIXED.value
    ctx.forge.set_status(
        ctx.session,
        ctx.fix_pr,
        state="success" if passed else "failure",
        context=STATUS_CONTEXT,
        description=f"reused verification #{last.id}: {last.verdict}",
    )
    return f"Reused verification #{last.id} ({last.verdict}) for `{ctx.fix_pr.head_sha[:12]}`."


COMMAND = CommandSpec(
    name="reuse-pipeline",
    summary="report the last verification again if the PR head is unchanged",
    usage="/bot reuse-pipeline",
    permission=Permission.WRITE,
    configure=no_options,
    handle=handle,
    examples=(
        Example(
            "/bot reuse-pipeline",
            "reports the last verification again if it verified the current head",
        ),
    ),
    order=40,
)
