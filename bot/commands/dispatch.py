"""From a PR comment to a command run (or a polite refusal), audited every time.

Only ``created`` comments on our fix PRs are read; bots (ourselves included) are ignored. The
author must have ``admin``/``write`` on the repository (the collaborator-permission endpoint,
not ``author_association``) or be on ``github_command_users``. A bad command gets the error and
the usage; nothing runs. Every ``/bot`` line is recorded in ``command_invocations``.

What a command is, who may use it and what it replies come from the ``Registry`` (the
``COMMAND`` spec of each module of ``bot.commands``); this module knows no command by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.commands.grammar import CommandError, find_command
from bot.commands.registry import CommandContext, CommandSpec, Permission, Registry, registry
from bot.config import Settings
from bot.db.models import CommandInvocation, Fix, FixState
from bot.forges.github.events import CommentEvent
from bot.forges.github.forge import GitHubForge

WRITERS = frozenset({"admin", "write", "maintain"})
AUDIT_TEXT_CHARS = 4000


@dataclass(frozen=True)
class Decision:
    """What happened to a command: outcome (accepted, refused, invalid, help, ignored), reply."""

    outcome: str
    reply: str
    command: str | None = None
    arguments: dict[str, Any] | None = None


def is_bot(settings: Settings, event: CommentEvent) -> bool:
    """Whether the comment comes from a bot account or from us."""
    login = event.login.lower()
    return (
        event.user_type.lower() == "bot"
        or login.endswith("[bot]")
        or login == settings.github_bot_login.lower()
    )


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


def _fix_for(session: Session, event: CommentEvent) -> Fix | None:
    return session.scalar(
        select(Fix)
        .where(Fix.forge == "github", Fix.repository == event.repository)
        .where(Fix.number == event.number)
        .order_by(Fix.id.desc())
    )


def _refusal(
    settings: Settings, forge: GitHubForge, fix: Fix, event: CommentEvent, spec: CommandSpec
) -> str | None:
    """Why ``spec`` may not run here (its permission, then the PR's state), or None."""
    if spec.permission is Permission.WRITE:
        refusal = authorised(settings, forge, event)
        if refusal is not None:
            return f"Sorry, not running `/bot {spec.name}`: {refusal}."
    if spec.needs_open_pr and fix.state != FixState.OPEN.value:
        return f"Not running `/bot {spec.name}`: this PR is {fix.state}."
    return None


def decide(
    session: Session,
    settings: Settings,
    forge: GitHubForge,
    fix: Fix,
    event: CommentEvent,
    line: str,
    commands: Registry | None = None,
) -> Decision:
    """Parse, authorise and run one command line with ``commands`` (default: the registry)."""
    commands = commands if commands is not None else registry()
    try:
        parsed = commands.parse(line)
    except CommandError as exc:
        return Decision("invalid", f"Cannot run `/bot`: {exc}\n\n```\n{exc.usage}\n```")
    spec = commands[parsed.name]
    refusal = _refusal(settings, forge, fix, event, spec)
    if refusal is not None:
        return Decision("refused", refusal, parsed.name, parsed.options)
    context = CommandContext(session, settings, fix, forge, event.login, commands)
    return Decision(spec.outcome, spec.handle(context, parsed), parsed.name, parsed.options)


def handle_comment(
    session: Session,
    settings: Settings,
    forge: GitHubForge,
    event: CommentEvent,
    delivery_id: int,
    commands: Registry | None = None,
) -> CommandInvocation | None:
    """Act on a ``/bot`` comment; returns the audit row (None: not a command for us)."""
    line = find_command(event.body)
    if event.action != "created" or line is None:
        return None
    fix = _fix_for(session, event)
    audit = CommandInvocation(
        delivery_id=delivery_id,
        repository=event.repository,
        pr_number=event.number,
        fix_id=fix.id if fix else None,
        author=event.login[:200],
        text=line[:AUDIT_TEXT_CHARS],
    )
    if is_bot(settings, event) or fix is None:
        why = "bot author" if is_bot(settings, event) else "not a repairbot PR"
        audit.outcome, audit.reply = "ignored", why
        session.add(audit)
        return audit
    decision = decide(session, settings, forge, fix, event, line, commands)
    audit.outcome, audit.reply = decision.outcome, decision.reply
    audit.command, audit.arguments = decision.command, _jsonable(decision.arguments or {})
    session.add(audit)
    reaction = {"accepted": "+1", "invalid": "confused"}.get(decision.outcome)
    if reaction is not None:
        forge.react(session, event.repository, event.number, event.comment_id, reaction)
    forge.post_comment(
        session,
        event.repository,
        event.number,
        f"@{event.login} {decision.reply}",
        key=f"reply:{event.repository}:{event.comment_id}",
    )
    return audit


def _jsonable(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if v not in (None, False)}
