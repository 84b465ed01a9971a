"""Webhook handlers, one per behaviour, each registered for its event with its help text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from bot.commands.dispatch import handle_comment
from bot.config import Settings
from bot.forges.github.events import (
    changes_base,
    check_run_failure,
    comment_event,
    pull_request_event,
    push_event,
    status_failure,
)
from bot.forges.github.forge import GitHubForge
from bot.intake.actions import (
    failed_actions_check_run,
    failed_workflow_job,
    fetch_job,
    intake_actions_job,
    is_actions_check_run,
)
from bot.intake.jenkins import intake_check_failure
from bot.pipeline.contract_triggers import on_pull_request, on_push
from bot.pipeline.opt_out_label import on_labels
from bot.pipeline.pull_requests import handle_pull_request


@dataclass
class EventContext:
    """One stored delivery being handled: its payload, the transaction and a GitHub forge."""

    session: Session
    settings: Settings
    delivery_id: int
    payload: dict[str, Any]
    forge: Callable[[], GitHubForge]


Handle = Callable[[EventContext], str]


@dataclass(frozen=True)
class EventHandler:
    """A behaviour: the event it answers, its name, its help text and its function."""

    event: str
    name: str
    help: str
    handle: Handle


HANDLERS: list[EventHandler] = []


def on(event: str, name: str, help: str) -> Callable[[Handle], Handle]:
    """Register the decorated function for ``event``."""

    def register(handle: Handle) -> Handle:
        HANDLERS.append(EventHandler(event, name, help, handle))
        return handle

    return register


def handlers_for(event: str) -> list[EventHandler]:
    """The handlers of ``event``, in registration order."""
    return [h for h in HANDLERS if h.event == event]


@on(
    "issue_comment",
    "bot-commands",
    "runs /bot commands on repairbot's PRs and repairbot's own (/repairbot ...) on any PR",
)
def bot_commands(ctx: EventContext) -> str:
    """``/bot`` commands, and those under repairbot's own prefix."""
    event = comment_event(ctx.payload)
    if event is None:
        return "not a comment on a pull request"
    audit = handle_comment(ctx.session, ctx.settings, ctx.forge(), event, ctx.delivery_id)
    return "no command" if audit is None else f"{audit.command}: {audit.outcome}"


@on("pull_request", "opt-out-label", "the opt-out label on a PR: the bot leaves that PR alone")
def opt_out_label(ctx: EventContext) -> str:
    """The PR's labels → its label opt-out recorded or lifted (before the contract check)."""
    event = pull_request_event(ctx.payload)
    if event is None:
        return "pull_request payload without the fields we need"
    return on_labels(ctx.session, ctx.settings, event)


@on("pull_request", "pr-state", "tracks repairbot's PRs and supersedes them when fixed elsewhere")
def pr_state(ctx: EventContext) -> str:
    """Merged / closed / synchronize of our PRs; supersede on someone else's merge."""
    event = pull_request_event(ctx.payload)
    if event is None:
        return "pull_request payload without the fields we need"
    return handle_pull_request(ctx.session, ctx.settings, ctx.forge(), event)


@on("check_run", "ci-check-run", "a failed check run linking a Jenkins build → its testReport")
def ci_check_run(ctx: EventContext) -> str:
    """Failed check runs → the CI intake."""
    if is_actions_check_run(ctx.payload):
        return "a GitHub Actions check run (see actions-check-run)"
    failure = check_run_failure(ctx.payload)
    if failure is None:
        return "not a failed check run with a details URL"
    return intake_check_failure(ctx.session, ctx.settings, failure, ctx.delivery_id)


@on("status", "ci-status", "a failed commit status linking a Jenkins build → its testReport")
def ci_status(ctx: EventContext) -> str:
    """Failed commit statuses → the CI intake."""
    failure = status_failure(ctx.payload)
    if failure is None:
        return "not a failed status with a target URL"
    return intake_check_failure(ctx.session, ctx.settings, failure, ctx.delivery_id)


@on("workflow_job", "actions-job", "a failed GitHub Actions job → its log → the CI intake")
def actions_job(ctx: EventContext) -> str:
    """Failed ``workflow_job`` events: download the job's log and classify it."""
    job = failed_workflow_job(ctx.payload)
    if job is None:
        return "not a completed, failed workflow job"
    return intake_actions_job(ctx.session, ctx.settings, job)


@on("check_run", "actions-check-run", "a failed check run of GitHub Actions → the job's log")
def actions_check_run(ctx: EventContext) -> str:
    """Failed check runs written by GitHub Actions: the same job as its ``workflow_job``."""
    found = failed_actions_check_run(ctx.payload)
    if found is None:
        return "not a failed GitHub Actions check run"
    if not ctx.settings.github_actions_logs:
        return "GitHub Actions logs are off (REPAIRBOT_GITHUB_ACTIONS_LOGS)"
    return intake_actions_job(ctx.session, ctx.settings, fetch_job(ctx.settings, *found))


@on("pull_request", "contract-check", "checks a PR for the contract violations it introduces")
def contract_check(ctx: EventContext) -> str:
    """Opened, reopened, pushed to or retargeted → the ``repairbot/contracts`` check."""
    event = pull_request_event(ctx.payload)
    if event is None:
        return "pull_request payload without the fields we need"
    return on_pull_request(ctx.session, ctx.settings, event, base_changed=changes_base(ctx.payload))


@on("push", "contract-recheck", "re-checks the open PRs into a branch whose contracts changed")
def contract_recheck(ctx: EventContext) -> str:
    """A push that changes a contract → the open PRs into that branch are checked again."""
    push = push_event(ctx.payload)
    if push is None:
        return "push payload without the fields we need"
    return on_push(ctx.session, ctx.settings, push)
