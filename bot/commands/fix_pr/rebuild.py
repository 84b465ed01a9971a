"""``/bot run`` on a fix PR that Buildkite built: a rebuild of that build, not a verification.

With ``REPAIRBOT_BUILDKITE_REBUILD_ON_RUN``, ``/bot run`` on one of repairbot's fix PRs whose
failures came from Buildkite (a report of that repository and PR keyed ``buildkite:...``) asks
Buildkite to rebuild the PR's latest such build (``PUT .../builds/{number}/rebuild``, token
scope ``write_builds``): the PR's own CI runs again, as TensorRT-LLM's ``/bot run`` means. The
``run`` handler only queues ``repairbot.buildkite_rebuild`` (the delivery's transaction must not
wait on Buildkite); the task (``bot.pipeline.buildkite_rebuild``) calls :func:`rebuild_run`,
which answers on the PR with the new build's link, or why there is none. A PR Buildkite never
reported on, or the setting off: ``/bot run`` queues a verification as before.

The answer's outbox key (one per invocation) marks the rebuild done: a task run twice (a worker
killed after Buildkite answered) finds it and does not rebuild again, and a ``PUT`` answered
``5xx`` is never repeated (``bot.forges.buildkite.rest``: it may have happened).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.inert_text import code_span
from bot.db.models import CiFailure, CommandInvocation, Fix
from bot.db.records.github_writes import GitHubWrite
from bot.db.session import read_scope, session_scope
from bot.forges.buildkite.events import BuildRef, build_of_key
from bot.forges.buildkite.rest import BuildkiteNotConfigured, BuildkiteRefused, call_json
from bot.forges.github.forge import GitHubForge
from fixers.repo.input_rules import http_url_problem

RECENT_REPORTS = 20


def buildkite_build_for(session: Session, fix: Fix) -> BuildRef | None:
    """The latest Buildkite build a report names for the fix PR, or None."""
    keys = session.scalars(
        select(CiFailure.idempotency_key)
        .where(CiFailure.repository == fix.repository, CiFailure.pr_number == fix.number)
        .where(CiFailure.idempotency_key.like("buildkite:%"))
        .order_by(CiFailure.id.desc())
        .limit(RECENT_REPORTS)
    )
    return next((ref for key in keys if (ref := build_of_key(key)) is not None), None)


def answer_key(invocation_id: int) -> str:
    """The outbox key of the rebuild's answer on the PR."""
    return f"buildkite-rebuild:{invocation_id}"


def _rebuilt(settings: Settings, ref: BuildRef) -> str:
    """Ask Buildkite for the rebuild; what to say about it."""
    try:
        build = call_json(settings, "PUT", f"{ref.path}/rebuild")
    except (BuildkiteRefused, BuildkiteNotConfigured) as exc:
        return f"could not rebuild Buildkite build {code_span(str(ref))}: {code_span(str(exc))}"
    number, url = build.get("number"), build.get("web_url")
    link = url if isinstance(url, str) and http_url_problem(url) is None else None
    new = f"#{number}" if type(number) is int else "a new build"
    return f"Buildkite is rebuilding {code_span(str(ref))} as {new}" + (
        f": {link}" if link else "."
    )


def rebuild_run(settings: Settings, invocation_id: int, ref: BuildRef) -> str:
    """Rebuild ``ref`` for invocation ``invocation_id`` and answer on its PR (once)."""
    key = answer_key(invocation_id)
    with read_scope(settings.resolved_database_url) as session:
        invocation = session.get(CommandInvocation, invocation_id)
        done = session.scalar(select(GitHubWrite.id).where(GitHubWrite.key == key))
        if invocation is None or done is not None:
            return "already answered" if invocation is not None else "no such invocation"
        repository, number, author = invocation.repository, invocation.pr_number, invocation.author
    said = _rebuilt(settings, ref)
    answer(settings, invocation_id, (repository, number, author), said)
    return said


def answer(settings: Settings, invocation_id: int, pull: tuple[str, int, str], text: str) -> None:
    """Say ``text`` on the invocation's PR, to its author, once (``answer_key``)."""
    repository, number, author = pull
    with session_scope(settings.resolved_database_url) as session:
        GitHubForge(settings).post_comment(
            session, repository, number, f"@{author} {text}", key=answer_key(invocation_id)
        )


def give_up(settings: Settings, invocation_id: int, ref: BuildRef, reason: str) -> str:
    """Answer an invocation whose rebuild could not be asked for after every retry."""
    with read_scope(settings.resolved_database_url) as session:
        invocation = session.get(CommandInvocation, invocation_id)
        if invocation is None:
            return "no such invocation"
        pull = (invocation.repository, invocation.pr_number, invocation.author)
    text = f"gave up asking Buildkite to rebuild {code_span(str(ref))}: {code_span(reason[:500])}"
    answer(settings, invocation_id, pull, text)
    return text
