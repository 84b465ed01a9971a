"""A repair run's state, recorded by the pipeline: each move in its own short transaction.

The stages decide (``Stop``: this run ends here, in this state, for this reason) and this module
records; a forge's :data:`~bot.forges.base.PublishOutcome` is recorded here too, with the
verification an opened fix gets at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from bot.config import Settings
from bot.db.crud import move_run
from bot.db.models import Fix, RepairRun, RunState
from bot.db.session import session_scope
from bot.forges.base import Extended, Linked, Opened, PublishOutcome
from bot.pipeline.fan_out.task import record_notice
from bot.runner.requests import request_verification

AUTOMATIC = "repairbot (automatic)"


@dataclass(frozen=True)
class Stop:
    """The run ends here: move it to ``state`` with ``reason``."""

    state: RunState
    reason: str


def move(settings: Settings, run_id: int, to: RunState, reason: str = "") -> None:
    """Move run ``run_id`` to ``to`` (a finished run stays as it is: see ``move_run``)."""
    with session_scope(settings.resolved_database_url) as session:
        move_run(session, run=session.get_one(RepairRun, run_id), to=to, reason=reason)


def stop(settings: Settings, run_id: int, end: Stop) -> None:
    """Record where and why run ``run_id`` ended."""
    move(settings, run_id, end.state, end.reason)


def still_live(settings: Settings, run_id: int) -> bool:
    """Whether run ``run_id`` is still being repaired (a duplicate delivery may have ended it)."""
    with session_scope(settings.resolved_database_url) as session:
        return not RunState(session.get_one(RepairRun, run_id).state).terminal


def record_publication(
    settings: Settings,
    run_id: int,
    outcome: PublishOutcome,
    note: str = "",
    *,
    notice_pr: int | None = None,
    verify: bool = True,
) -> None:
    """The run after ``forge.publish``: linked (duplicate), extended or opened (PR opened, and
    an opened fix is verified at once: the bot authored its branch, so it is trusted).

    ``note`` follows the outcome's reason in the timeline (the stages' seconds); ``notice_pr``:
    the PR whose pipeline failed because of the base branch, told of the fix in the same
    transaction (``bot.pipeline.fan_out.task``); ``verify``: False when the repository's autonomy is
    ``pr`` (an opened fix is then not verified automatically)."""
    with session_scope(settings.resolved_database_url) as session:
        run = session.get_one(RepairRun, run_id)
        if RunState(run.state).terminal:
            return  # a duplicate delivery of this task finished the run first
        match outcome:
            case Linked(fix_id=fix_id, url=url, reason=reason):
                run.fix_id, run.linked_url = fix_id, url
                move_run(session, run=run, to=RunState.DUPLICATE, reason=_noted(reason, note))
            case Extended(fix_id=fix_id, url=url, reason=reason):
                run.fix_id, run.linked_url = fix_id, url
                move_run(session, run=run, to=RunState.PR_OPENED, reason=_noted(reason, note))
            case Opened(fix_id=fix_id, reason=reason):
                run.fix_id = fix_id
                move_run(session, run=run, to=RunState.PR_OPENED, reason=_noted(reason, note))
                if verify:
                    request_verification(
                        session,
                        fix=session.get_one(Fix, fix_id),
                        requested_by=AUTOMATIC,
                        default_queue=settings.verify_default_queue,
                    )
            case _:
                assert_never(outcome)
        if notice_pr is not None and run.fix_id is not None:
            record_notice(
                session,
                pr_number=notice_pr,
                fix=session.get_one(Fix, run.fix_id),
                changed_fix=not isinstance(outcome, Linked),
                failed_head=run.report.head_sha,
            )


def _noted(reason: str, note: str) -> str:
    return f"{reason} {note}" if note else reason
