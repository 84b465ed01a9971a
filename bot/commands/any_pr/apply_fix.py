"""``/repairbot apply-fix``: fix every contract violation at this PR's head, for a maintainer.

Read on any PR (repairbot's own prefix, ``Settings.command_prefix``). When the bot may write to
the PR's branch (same repository, or a fork that allows edits from maintainers) it pushes one
fix commit there, fast-forward only. Otherwise the fix would have to carry the fork's commits
into a branch of the base repository, where workflows that run on ``push`` would run them with
the repository's secrets: the bot replies what it would push where, and does it only once a
maintainer confirms the reviewed head (``--confirm-fork HEAD_SHA``), into the
``repairbot-fork/`` namespace (docs/security.md), with a PR from it into the fork. The work
(sweep, sandboxed import check, push) takes seconds, and the
delivery's transaction holds SQLite's write lock (``BEGIN IMMEDIATE``) for as long as its
handlers run, so the handler only queues ``repairbot.apply_fix`` with the audit row's id; that
task (``bot.pipeline.repair.apply_fix`` → ``bot.commands.any_pr.apply_fix_run``) replies when it
is done.
"""

from __future__ import annotations

import argparse
import re

from bot.commands.grammar import ParsedCommand
from bot.commands.registry import QUEUED, CommandContext, CommandSpec, Example, Permission, Scope
from bot.db.models import utcnow
from bot.queue.starts import start_apply_fix

_SHA = re.compile(r"^[0-9a-f]{7,40}$")


def _head(text: str) -> str:
    if not _SHA.match(text):
        raise argparse.ArgumentTypeError("give the PR head's commit (7 to 40 hex digits)")
    return text


def configure(parser: argparse.ArgumentParser) -> None:
    """``apply-fix``'s one option: the confirmation a fork PR's fix needs."""
    parser.add_argument(
        "--confirm-fork",
        metavar="HEAD_SHA",
        type=_head,
        help=(
            "for a fork PR that does not allow edits from maintainers: you reviewed its commits "
            "up to HEAD_SHA, and they may be pushed to a repairbot-fork/ branch of this "
            "repository"
        ),
    )


def handle(ctx: CommandContext, parsed: ParsedCommand) -> str:
    """Queue the work once this delivery's transaction commits (the audit row with it); the
    row keeps what the reconciler needs to send it again if the message is lost."""
    ctx.invocation.comment_id, ctx.invocation.sent_at = ctx.event.comment_id, utcnow()
    start_apply_fix(ctx.session, ctx.invocation.id, ctx.event.comment_id)
    return f"queued for @{ctx.login}: sweeping this PR's head; the reply follows when done."


COMMAND = CommandSpec(
    name="apply-fix",
    summary=(
        "fix every contract violation at this PR's head: one commit pushed to its branch, or "
        "(confirmed by a maintainer) a PR into the fork against it when the bot may not push "
        "there"
    ),
    usage="/repairbot apply-fix [--confirm-fork HEAD_SHA]",
    permission=Permission.WRITE,
    configure=configure,
    handle=handle,
    examples=(
        Example(
            "/repairbot apply-fix",
            "one fix commit on the PR's branch (same repository, or maintainer edits allowed); "
            "on a fork that does not allow them, a reply saying what would be pushed where",
        ),
        Example(
            "/repairbot apply-fix --confirm-fork 1a2b3c4",
            "on such a fork PR, once its commits up to 1a2b3c4 are reviewed: they and the fix "
            "commit go to repairbot-fork/apply-fix/N here, and a PR from it into the fork",
        ),
    ),
    # The PR's state is GitHub's (it need not be one of our fix PRs): the task checks it.
    needs_open_pr=False,
    outcome=QUEUED,
    order=60,
    scopes=(Scope.ANY_PR,),
)
