"""From a PR comment to a command run (or a polite refusal), audited every time.

Two prefixes are read. ``/bot`` lines (TensorRT-LLM's CI grammar) only on our fix PRs: on any
other PR they belong to the repository's own CI bot, and are ignored. Lines starting with
repairbot's prefix (``Settings.command_prefix``, default ``/repairbot``) on any PR. Only
``created`` comments are read; bots (ourselves included) are ignored. A ``write`` command's
author must have ``admin``/``write`` on the repository (the collaborator-permission endpoint,
not ``author_association``) or be on ``github_command_users``. A bad command gets the error and
the usage; nothing runs. Every command line is recorded in ``command_invocations``; a command
whose outcome is ``queued`` gets an 👀 reaction now and its reply from the task doing its work.

What a command is, who may use it and what it replies come from the ``Registry`` (the
``COMMAND`` spec of each module of ``bot.commands``); this module knows no command by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.commands.grammar import PROG, CommandError, find_command, parse
from bot.commands.registry import (
    QUEUED,
    CommandContext,
    CommandSpec,
    Permission,
    Registry,
    Scope,
    registry,
)
from bot.config import Settings
from bot.db.inert_text import code_span
from bot.db.models import CommandInvocation, Fix, FixState
from bot.forges.github.events import CommentEvent, is_bot_account
from bot.forges.github.forge import GitHubForge
from bot.forges.github.pulls import WRITERS

AUDIT_TEXT_CHARS = 4000


@dataclass(frozen=True)
class Decision:
    """What happened to a command: outcome (accepted, refused, invalid, help, ignored, or
    queued: its task replies later), and the reply."""

    outcome: str
    reply: str
    command: str | None = None
    arguments: dict[str, Any] | None = None


def is_bot(settings: Settings, event: CommentEvent) -> bool:
    """Whether the comment comes from a bot account or from us."""
    return is_bot_account(settings, event.login, event.user_type)


def authorised(settings: Settings, forge: GitHubForge, event: CommentEvent) -> str | None:
    """None when the author may give commands, else the reason they may not."""
    allowed = {user.lower() for user in settings.github_command_users}
    if event.login.lower() in allowed:
        return None
    level = forge.permission(event.repository, event.login)
    if level in WRITERS:
        return None
    return (
        f"@{event.login} has `{level}` access to {event.repository}; commands need write or admin"
    )


def is_pr_author(forge: GitHubForge, event: CommentEvent) -> bool:
    """Whether the comment's author opened the PR (asked of GitHub when the payload lacks it)."""
    author = event.pr_author or forge.pull(event.repository, event.number).author
    return author.lower() == event.login.lower()


def _fix_for(session: Session, event: CommentEvent) -> Fix | None:
    return session.scalar(
        select(Fix)
        .where(Fix.forge == "github", Fix.repository == event.repository)
        .where(Fix.number == event.number)
        .order_by(Fix.id.desc())
    )


def audit_text(line: str) -> str:
    """The command line as the audit keeps it: capped, control characters written as escapes
    (PostgreSQL text cannot hold NUL, and a hostile line is refused, never silently lost)."""
    return "".join(
        f"\\x{ord(char):02x}" if ord(char) < 0x20 and char != "\t" else char
        for char in line[:AUDIT_TEXT_CHARS]
    )


def reply_key(repository: str, comment_id: int) -> str:
    """The outbox key of the reply to a comment: one reply per comment, whoever posts it."""
    return f"reply:{repository}:{comment_id}"


def _refusal(
    settings: Settings,
    forge: GitHubForge,
    fix: Fix | None,
    event: CommentEvent,
    spec: CommandSpec,
    prog: str,
) -> str | None:
    """Why ``spec`` may not run here (its permission, then the fix PR's state), or None."""
    if spec.permission is Permission.WRITE:
        refusal = authorised(settings, forge, event)
        if refusal is not None:
            return f"Sorry, not running `{prog} {spec.name}`: {refusal}."
    if spec.permission is Permission.AUTHOR and not is_pr_author(forge, event):
        refusal = authorised(settings, forge, event)
        if refusal is not None:
            return f"Sorry, not running `{prog} {spec.name}`: not the PR's author, and {refusal}."
    if spec.needs_open_pr and fix is not None and fix.state != FixState.OPEN.value:
        return f"Not running `{prog} {spec.name}`: this PR is {fix.state}."
    return None


def decide(
    context: CommandContext,
    forge: GitHubForge,
    line: str,
) -> Decision:
    """Parse, authorise and run one command line in ``context``'s scope and registry."""
    prog, commands = context.prog, context.registry
    try:
        parsed = parse(line, commands.parser(context.scope, context.settings.command_prefix))
    except CommandError as exc:
        # argparse quotes the commenter's own words ("unrecognized arguments: @team"): echoed
        # only inside a code span, where nothing is a mention or a link.
        reply = f"Cannot run {code_span(prog)}: {code_span(str(exc))}\n\n```\n{exc.usage}\n```"
        return Decision("invalid", reply)
    spec = commands[parsed.name]
    refusal = _refusal(context.settings, forge, context.fix, context.event, spec, prog)
    if refusal is not None:
        return Decision("refused", refusal, parsed.name, parsed.options)
    return Decision(spec.outcome, spec.handle(context, parsed), parsed.name, parsed.options)


def _our_line(
    session: Session, settings: Settings, event: CommentEvent, first: str
) -> tuple[str, Fix | None]:
    """The command line the comment gives us (``first``: its first command line of either
    prefix), and the PR's fix (None: not one of ours).

    On a PR that is not ours, ``/bot`` lines are the repository's CI bot's: the first line with
    our prefix is read instead, and a ``/bot`` line alone is kept to be audited as ignored.
    """
    fix = _fix_for(session, event)
    if fix is None:
        return find_command(event.body, (settings.command_prefix,)) or first, None
    return first, fix


def handle_comment(
    session: Session,
    settings: Settings,
    forge: GitHubForge,
    event: CommentEvent,
    delivery_id: int,
    commands: Registry | None = None,
) -> CommandInvocation | None:
    """Act on a command comment; returns the audit row (None: not a command for us)."""
    first = find_command(event.body, (PROG, settings.command_prefix))
    if event.action != "created" or first is None:
        return None
    commands = commands if commands is not None else registry()
    line, fix = _our_line(session, settings, event, first)
    scope = commands.scope_of(line, settings.command_prefix)
    audit = CommandInvocation(
        delivery_id=delivery_id,
        repository=event.repository,
        pr_number=event.number,
        fix_id=fix.id if fix else None,
        author=event.login[:200],
        text=audit_text(line),
    )
    session.add(audit)
    if is_bot(settings, event) or (fix is None and scope is Scope.FIX_PR):
        why = "bot author" if is_bot(settings, event) else "not a repairbot PR"
        audit.outcome, audit.reply = "ignored", why
        return audit
    # What the row says if a GitHub error ends the delivery before a decision; flushed now so
    # that a queued command's task can take its id.
    audit.outcome, audit.reply = "error", "stopped before a decision: see the delivery"
    session.flush()
    context = CommandContext(
        session=session,
        settings=settings,
        fix=fix,
        forge=forge,
        login=event.login,
        registry=commands,
        scope=scope,
        event=event,
        invocation=audit,
    )
    decision = decide(context, forge, line)
    audit.outcome, audit.reply = decision.outcome, decision.reply
    audit.command, audit.arguments = decision.command, _jsonable(decision.arguments or {})
    reaction = {"accepted": "+1", "invalid": "confused", QUEUED: "eyes"}.get(decision.outcome)
    if reaction is not None:
        forge.react(session, event.repository, event.number, event.comment_id, reaction)
    if decision.outcome != QUEUED:
        forge.post_comment(
            session,
            event.repository,
            event.number,
            f"@{event.login} {decision.reply}",
            key=reply_key(event.repository, event.comment_id),
        )
    return audit


def _jsonable(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if v not in (None, False)}
