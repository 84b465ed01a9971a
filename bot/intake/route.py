"""Webhook handlers, one per behaviour, each registered for its event with its help text.

Each handler does what leaves the database (GitHub, logs, git) itself and returns its write
phase; ``bot.intake.process_delivery`` runs the write phases in one short transaction."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from bot.commands.dispatch import apply_comment, prepare_comment
from bot.config import Settings
from bot.db.session import Reading, Writes
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
from bot.intake.buildkite import intake_finished_build, intake_finished_job
from bot.intake.gitlab import (
    complete_job_hook_job,
    complete_pipeline_job,
    intake_gitlab_jobs,
    job_hook_job,
    pipeline_hook_jobs,
)
from bot.intake.jenkins import intake_check_failure
from bot.pipeline.contract_check.triggers import on_pull_request, on_push
from bot.pipeline.memory.opt_out_label import on_labels
from bot.pipeline.pull_requests import prepare_pull_request


@dataclass
class EventContext:
    """One stored delivery being handled: its payload, a GitHub forge, and reading sessions.

    A handler asks GitHub, fetches logs and runs git itself, holding no database lock (it reads
    through ``reading``), and returns its write phase (``Writes``): the database work that
    ``process_delivery`` then runs, with every handler's, in one short transaction.
    """

    settings: Settings
    delivery_id: int
    payload: dict[str, Any]
    forge: Callable[[], GitHubForge]
    reading: Reading


Handle = Callable[[EventContext], "Writes | str"]


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
def bot_commands(ctx: EventContext) -> Writes | str:
    """``/bot`` commands, and those under repairbot's own prefix."""
    event = comment_event(ctx.payload)
    if event is None:
        return "not a comment on a pull request"
    forge = ctx.forge()
    prepared = prepare_comment(ctx.settings, ctx.reading, forge, event)
    if prepared is None:
        return "no command"

    def audit(session: Session) -> str:
        row = apply_comment(session, ctx.settings, forge, prepared, ctx.delivery_id)
        return f"{row.command}: {row.outcome}"

    return audit


@on("pull_request", "opt-out-label", "the opt-out label on a PR: the bot leaves that PR alone")
def opt_out_label(ctx: EventContext) -> Writes | str:
    """The PR's labels → its label opt-out recorded or lifted (before the contract check)."""
    event = pull_request_event(ctx.payload)
    if event is None:
        return "pull_request payload without the fields we need"
    return lambda session: on_labels(session, ctx.settings, event)


@on("pull_request", "pr-state", "tracks repairbot's PRs and supersedes them when fixed elsewhere")
def pr_state(ctx: EventContext) -> Writes | str:
    """Merged / closed / synchronize of our PRs; supersede on someone else's merge."""
    event = pull_request_event(ctx.payload)
    if event is None:
        return "pull_request payload without the fields we need"
    return prepare_pull_request(ctx.settings, ctx.reading, ctx.forge, event)


@on("check_run", "ci-check-run", "a failed check run linking a Jenkins build → its testReport")
def ci_check_run(ctx: EventContext) -> Writes | str:
    """Failed check runs → the CI intake."""
    if is_actions_check_run(ctx.payload):
        return "a GitHub Actions check run (see actions-check-run)"
    failure = check_run_failure(ctx.payload)
    if failure is None:
        return "not a failed check run with a details URL"
    return intake_check_failure(ctx.settings, ctx.reading, failure)


@on("status", "ci-status", "a failed commit status linking a Jenkins build → its testReport")
def ci_status(ctx: EventContext) -> Writes | str:
    """Failed commit statuses → the CI intake."""
    failure = status_failure(ctx.payload)
    if failure is None:
        return "not a failed status with a target URL"
    return intake_check_failure(ctx.settings, ctx.reading, failure)


@on("workflow_job", "actions-job", "a failed GitHub Actions job → its log → the CI intake")
def actions_job(ctx: EventContext) -> Writes | str:
    """Failed ``workflow_job`` events: download the job's log and classify it."""
    job = failed_workflow_job(ctx.payload)
    if job is None:
        return "not a completed, failed workflow job"
    return intake_actions_job(ctx.settings, ctx.reading, job)


@on("check_run", "actions-check-run", "a failed check run of GitHub Actions → the job's log")
def actions_check_run(ctx: EventContext) -> Writes | str:
    """Failed check runs written by GitHub Actions: the same job as its ``workflow_job``."""
    found = failed_actions_check_run(ctx.payload)
    if found is None:
        return "not a failed GitHub Actions check run"
    if not ctx.settings.github_actions_logs:
        return "GitHub Actions logs are off (REPAIRBOT_GITHUB_ACTIONS_LOGS)"
    return intake_actions_job(ctx.settings, ctx.reading, fetch_job(ctx.settings, *found))


@on("pull_request", "contract-check", "checks a PR for the contract violations it introduces")
def contract_check(ctx: EventContext) -> Writes | str:
    """Opened, reopened, pushed to or retargeted → the ``repairbot/contracts`` check."""
    event = pull_request_event(ctx.payload)
    if event is None:
        return "pull_request payload without the fields we need"
    base_changed = changes_base(ctx.payload)
    return lambda session: on_pull_request(session, ctx.settings, event, base_changed=base_changed)


@on("push", "contract-recheck", "re-checks the open PRs into a branch whose contracts changed")
def contract_recheck(ctx: EventContext) -> Writes | str:
    """A push that changes a contract → the open PRs into that branch are checked again."""
    push = push_event(ctx.payload)
    if push is None:
        return "push payload without the fields we need"
    return lambda session: on_push(session, ctx.settings, push)


@on(
    "Pipeline Hook",
    "gitlab-pipeline",
    "a GitLab pipeline's failed jobs → their traces → the CI intake",
)
def gitlab_pipeline(ctx: EventContext) -> Writes | str:
    """GitLab's Pipeline Hook: every failed job's trace, one report per job."""
    jobs = pipeline_hook_jobs(ctx.settings, ctx.payload)
    return intake_gitlab_jobs(ctx.settings, ctx.reading, jobs, complete_pipeline_job)


@on("Job Hook", "gitlab-job", "a failed GitLab job → its trace → the CI intake")
def gitlab_job(ctx: EventContext) -> Writes | str:
    """GitLab's Job Hook: the same report as the pipeline's, whichever arrives first."""
    job = job_hook_job(ctx.settings, ctx.payload)
    if job is None:
        return "not a failed GitLab job"
    return intake_gitlab_jobs(ctx.settings, ctx.reading, [job], complete_job_hook_job)


@on("job.finished", "buildkite-job", "a failed Buildkite job → its log → the CI intake")
def buildkite_job(ctx: EventContext) -> Writes | str:
    """Buildkite's ``job.finished``: the failed job's log, one report."""
    return intake_finished_job(ctx.settings, ctx.reading, ctx.payload)


@on(
    "build.finished",
    "buildkite-build",
    "a failed Buildkite build → one job delivery per failed job",
)
def buildkite_build(ctx: EventContext) -> Writes | str:
    """Buildkite's ``build.finished``: its failed jobs, each handled as its ``job.finished``."""
    return intake_finished_build(ctx.settings, ctx.payload)
