"""From a PR comment to a command run (or a polite refusal), audited every time.

Two prefixes are read. ``/bot`` lines (TensorRT-LLM's CI grammar) only on our fix PRs: on any
other PR they belong to the repository's own CI bot, and are ignored. Lines starting with
repairbot's prefix (``Settings.command_prefix``, default ``/repairbot``) on any PR. Only
``created`` comments are read, and only their plain-text lines (``grammar.plain_lines``); bots
(ourselves included) are ignored. A ``write`` command's author must have ``admin``/``write`` on
the repository (the collaborator-permission endpoint, not ``author_association``) or be on
``github_command_users``. A bad command gets the error and the usage; nothing runs. Every command
line is recorded in ``command_invocations``; a command whose outcome is ``queued`` gets an 👀
reaction now and its reply from the task doing its work. Answers are budgeted
(``reply_budget``): a stranger gets at most one answer per PR per hour.

Two phases, so that no database lock is held while GitHub is asked anything: ``prepare_comment``
reads (a reading session), parses and asks GitHub for the author's permission;
``apply_comment`` audits, runs the command and queues its answer as deferred writes
(``bot.forges.github.outbox``), all in the delivery's one short transaction.

What a command is, who may use it and what it replies come from the ``Registry`` (the
``COMMAND`` spec of each module of ``bot.commands``); this module knows no command by name.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.commands.grammar import PROG, CommandError, ParsedCommand, find_command, parse
from bot.commands.registry import (
    QUEUED,
    CommandContext,
    CommandSpec,
    Permission,
    Registry,
    Scope,
    prog_for,
    registry,
)
from bot.commands.reply_budget import is_stranger, withheld
from bot.config import Settings
from bot.db.inert_text import code_span
from bot.db.models import CommandInvocation, Fix, FixState
from bot.db.session import Reading
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
    event: CommentEvent,
    spec: CommandSpec,
    prog: str,
) -> str | None:
    """Why ``spec`` may not run for this author (its permission, asked of GitHub), or None."""
    if spec.permission is Permission.WRITE:
        refusal = authorised(settings, forge, event)
        if refusal is not None:
            return f"Sorry, not running `{prog} {spec.name}`: {refusal}."
    if spec.permission is Permission.AUTHOR and not is_pr_author(forge, event):
        refusal = authorised(settings, forge, event)
        if refusal is not None:
            return f"Sorry, not running `{prog} {spec.name}`: not the PR's author, and {refusal}."
    return None


@dataclass(frozen=True)
class Prepared:
    """A command comment once everything outside the database is known: the line, where it was
    read, the fix PR it is on, and the parse or the refusal (the GitHub reads are done)."""

    event: CommentEvent
    line: str
    scope: Scope
    fix_id: int | None
    ignored: str | None = None
    parsed: ParsedCommand | None = None
    invalid: str | None = None
    refusal: str | None = None


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


def prepare_comment(
    settings: Settings,
    reading: Reading,
    forge: GitHubForge,
    event: CommentEvent,
    commands: Registry | None = None,
) -> Prepared | None:
    """Everything a command comment needs from outside the database, asked before any write
    lock is taken: the line (None: not a command for us), the parse, the author's permission."""
    first = find_command(event.body, (PROG, settings.command_prefix))
    if event.action != "created" or first is None:
        return None
    commands = commands if commands is not None else registry()
    with reading() as session:
        line, fix = _our_line(session, settings, event, first)
        fix_id = fix.id if fix is not None else None
    scope = commands.scope_of(line, settings.command_prefix)
    prepared = Prepared(event, line, scope, fix_id)
    if is_bot(settings, event) or (fix_id is None and scope is Scope.FIX_PR):
        why = "bot author" if is_bot(settings, event) else "not a repairbot PR"
        return replace(prepared, ignored=why)
    prog = prog_for(scope, settings.command_prefix)
    try:
        parsed = parse(line, commands.parser(scope, settings.command_prefix))
    except CommandError as exc:
        # argparse quotes the commenter's own words ("unrecognized arguments: @team"): echoed
        # only inside a code span, where nothing is a mention or a link.
        reply = f"Cannot run {code_span(prog)}: {code_span(str(exc))}\n\n```\n{exc.usage}\n```"
        return replace(prepared, invalid=reply)
    refusal = _refusal(settings, forge, event, commands[parsed.name], prog)
    return replace(prepared, parsed=parsed, refusal=refusal)


def _decide(context: CommandContext, prepared: Prepared) -> Decision:
    """Run a prepared command line (or say why not) in ``context``'s transaction."""
    if prepared.invalid is not None:
        return Decision("invalid", prepared.invalid)
    parsed = prepared.parsed
    assert parsed is not None
    spec = context.registry[parsed.name]
    if prepared.refusal is not None:
        return Decision("refused", prepared.refusal, parsed.name, parsed.options)
    fix = context.fix
    if spec.needs_open_pr and fix is not None and fix.state != FixState.OPEN.value:
        reply = f"Not running `{context.prog} {spec.name}`: this PR is {fix.state}."
        return Decision("refused", reply, parsed.name, parsed.options)
    return Decision(spec.outcome, spec.handle(context, parsed), parsed.name, parsed.options)


def apply_comment(
    session: Session,
    settings: Settings,
    forge: GitHubForge,
    prepared: Prepared,
    delivery_id: int,
    commands: Registry | None = None,
) -> CommandInvocation:
    """Audit, run and answer a prepared command comment in ``session``'s transaction: no call
    leaves the database (the answer is a deferred write, within the reply budgets)."""
    event = prepared.event
    fix = session.get(Fix, prepared.fix_id) if prepared.fix_id is not None else None
    audit = CommandInvocation(
        delivery_id=delivery_id,
        repository=event.repository,
        pr_number=event.number,
        fix_id=prepared.fix_id,
        author=event.login[:200],
        text=audit_text(prepared.line),
    )
    session.add(audit)
    if prepared.ignored is not None:
        audit.outcome, audit.reply = "ignored", prepared.ignored
        return audit
    # What the row says if an error ends the delivery before a decision; flushed now so that a
    # queued command's task can take its id.
    audit.outcome, audit.reply = "error", "stopped before a decision: see the delivery"
    session.flush()
    context = CommandContext(
        session=session,
        settings=settings,
        fix=fix,
        forge=forge,
        login=event.login,
        registry=commands if commands is not None else registry(),
        scope=prepared.scope,
        event=event,
        invocation=audit,
    )
    decision = _decide(context, prepared)
    audit.outcome, audit.reply = decision.outcome, decision.reply
    audit.command, audit.arguments = decision.command, _jsonable(decision.arguments or {})
    _answer(session, settings, forge, audit, decision, event)
    return audit


def _answer(
    session: Session,
    settings: Settings,
    forge: GitHubForge,
    audit: CommandInvocation,
    decision: Decision,
    event: CommentEvent,
) -> None:
    """React and reply within the reply budgets (``bot.commands.reply_budget``): a stranger's
    invalid command gets a reaction at most; a queued command's reply comes from its task."""
    audit.withheld = withheld(session, settings, event)
    if audit.withheld is not None:
        return
    audit.answered = True
    reaction = {"accepted": "+1", "invalid": "confused", QUEUED: "eyes"}.get(decision.outcome)
    if reaction is not None:
        forge.react(session, event.repository, event.number, event.comment_id, reaction)
    if decision.outcome == QUEUED or (
        decision.outcome == "invalid" and is_stranger(settings, event)
    ):
        return
    forge.post_comment(
        session,
        event.repository,
        event.number,
        f"@{event.login} {decision.reply}",
        key=reply_key(event.repository, event.comment_id),
    )


def _jsonable(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if v not in (None, False)}
