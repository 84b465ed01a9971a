"""``/repairbot apply-fix``: fix every contract violation at this PR's head, for a maintainer.

Read on any PR (repairbot's own prefix, ``Settings.command_prefix``). When the bot may write to
the PR's branch (same repository, or a fork that allows edits from maintainers) it pushes one
fix commit there, fast-forward only; otherwise it opens a PR into the fork against the author's
branch and links it. The work (sweep, sandboxed import check, push) takes seconds, and the
delivery's transaction holds SQLite's write lock (``BEGIN IMMEDIATE``) for as long as its
handlers run, so the handler only queues ``repairbot.apply_fix`` with the audit row's id; that
task (``bot.pipeline.apply_fix`` → ``bot.commands.apply_fix_run``) replies when it is done.
"""

from __future__ import annotations

from bot.commands.grammar import ParsedCommand, no_options
from bot.commands.registry import QUEUED, CommandContext, CommandSpec, Example, Permission, Scope
from bot.db.models import utcnow
from bot.queue import names as task_names
from bot.queue.enqueue import enqueue_after_commit


def handle(ctx: CommandContext, parsed: ParsedCommand) -> str:
    """Queue the work once this delivery's transaction commits (the audit row with it); the
    row keeps what the reconciler needs to send it again if the message is lost."""
    ctx.invocation.comment_id, ctx.invocation.sent_at = ctx.event.comment_id, utcnow()
    enqueue_after_commit(ctx.session, task_names.APPLY_FIX, ctx.invocation.id, ctx.event.comment_id)
    return f"queued for @{ctx.login}: sweeping this PR's head; the reply follows when done."


COMMAND = CommandSpec(
    name="apply-fix",
    summary=(
        "fix every contract violation at this PR's head: one commit pushed to its branch, or a "
        "PR into the fork against it when the bot may not push there"
    ),
    usage="/repairbot apply-fix",
    permission=Permission.WRITE,
    configure=no_options,
    handle=handle,
    examples=(
        Example(
            "/repairbot apply-fix",
            "one fix commit on the PR's branch (same repository, or maintainer edits allowed); "
            "else a PR into the fork, linked in the reply",
        ),
    ),
    # The PR's state is GitHub's (it need not be one of our fix PRs): the task checks it.
    needs_open_pr=False,
    outcome=QUEUED,
    order=60,
    scopes=(Scope.ANY_PR,),
)
