"""Stage 2: sweep the failing commit, apply every fix, and open one PR per root cause.

The stage, in order: start the attempt (``repair_start``), resolve the repository
(``repair_target``), then in a fresh worktree sweep and fix, write, check the base branch,
compose the candidate (``repair_steps``), have the forge publish it and record the outcome
(``run_state``).

Each state change commits in its own short transaction: the git and LibCST work in between holds
no database lock, and a crash anywhere leaves a state the reconciler can resume from. Rerunning
is safe: the worktree is made afresh, the branch name is derived from the dedupe key, and the
unique index on open fixes refuses a second PR for the same violations.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from uuid import uuid4

from bot.config import Settings
from bot.db.models import RunState
from bot.db.rows import violation_key
from bot.forges.base import Candidate
from bot.forges.branch_guard import BranchGuarded
from bot.forges.github.outbox import NoSlot
from bot.forges.github.retry import RateLimited
from bot.forges.provenance import ProvenanceRefused, trusted_config
from bot.git import GitError, fresh_worktree, remove_worktree
from bot.pipeline.memory.loop_guard import guard_report
from bot.pipeline.memory.policy_gate import (
    allowed_target,
    left_out,
    suggest,
    without_opted_out_paths,
)
from bot.pipeline.memory.suppression_gate import held_back, held_keys, held_note
from bot.pipeline.repair.import_spare import start_spares, take_spare
from bot.pipeline.repair.run_state import Stop, move, record_publication, still_live, stop
from bot.pipeline.repair.stage_times import StageClock
from bot.pipeline.repair.start import RunContext, give_back_attempt, start_attempt
from bot.pipeline.repair.steps import already_fixed, candidate_for, swept, write_fixes
from bot.pipeline.repair.target import Target
from bot.pipeline.repair.untrusted_heads import reviewed_instead
from bot.pipeline.task_base import RepairbotTask, TransientError
from bot.queue import names as task_names
from bot.queue.celery_app import app
from bot.runner.environment import import_check_python
from bot.runner.sandbox import sandbox_options
from bot.runner.workdirs import leased
from fixers.evidence.import_check import ImportServer
from fixers.repo.policy import Autonomy, RepoPolicy
from fixers.sweep.outcome import FixResult
from fixers.sweep.run import fix

OUT_OF_MEMORY = "ran out of memory"
log = logging.getLogger(__name__)


@app.task(name=task_names.REPAIR, base=RepairbotTask, bind=True)
def repair(self: RepairbotTask, run_id: int) -> None:
    """Repair run ``run_id`` end to end, up to a recorded PR (or a reason why none)."""
    repair_run(self.settings, run_id)


def repair_run(settings: Settings, run_id: int) -> None:
    """The repair stage for run ``run_id``; one that runs out of memory fails for good (a retry
    would do the same)."""
    context = start_attempt(settings, run_id)
    if context is None:
        return
    allowed = allowed_target(settings, context)  # opt-outs, autonomy "report" (policy_gate)
    if isinstance(allowed, Stop):
        stop(settings, run_id, allowed)
        return
    target, policy = allowed
    guarded = guard_report(settings, run_id, target)  # bot-caused, budget spent (loop_guard)
    if guarded is not None:
        stop(settings, run_id, guarded)
        return
    if reviewed_instead(settings, run_id, target):  # a PR's own violation: its review says it
        return
    try:
        _in_worktree(settings, context, target, policy)
    except NoSlot:
        give_back_attempt(settings, run_id)  # not a failure: the task comes back for a slot
        raise
    except MemoryError:
        move(
            settings,
            run_id,
            RunState.FAILED,
            f"{OUT_OF_MEMORY} during attempt {context.attempts}: not retried (a file too large "
            "to parse? see max_file_bytes in .repairbot.toml)",
        )


def _in_worktree(
    settings: Settings, context: RunContext, target: Target, policy: RepoPolicy
) -> None:
    clock = StageClock()
    spare = take_spare(settings)  # an import check warmed up for this attempt, if one waits
    # One worktree per attempt: a re-enqueued duplicate of a slow run must not share it.
    token = spare.token if spare is not None else uuid4().hex[:8]
    worktree = settings.worktrees_dir.resolve() / f"run-{context.run_id}-{token}"
    # Leased: if this process is killed, the next start prunes the worktree (bot.runner.workdirs).
    with leased(worktree):
        server = spare.claim(worktree) if spare is not None else None
        try:
            start_spares(settings)  # for the next attempts, warming up while this one works
            fresh_worktree(target.repo, worktree, target.base_sha)
            clock.lap("worktree")
            # An untrusted head is swept under the base's rules, not the ones it brings.
            rules = (
                trusted_config(target.repo, worktree, target.trusted_tip)
                if target.untrusted is not None
                else contextlib.nullcontext()
            )
            with rules:
                repair_in(
                    settings, context, target, worktree, server=server, clock=clock, policy=policy
                )
        except (GitError, RateLimited) as exc:
            raise TransientError(str(exc)) from exc
        finally:
            if server is not None:
                server.close()  # already closed when the check ran; safe again
            remove_worktree(target.repo, worktree)


def repair_in(
    settings: Settings,
    context: RunContext,
    target: Target,
    worktree: Path,
    *,
    server: ImportServer | None = None,
    clock: StageClock | None = None,
    policy: RepoPolicy | None = None,
) -> None:
    """Sweep and fix → write → already fixed on the base? → compose → publish → record.

    ``server``: an import server started ahead whose sandbox sees ``worktree``; ``clock``
    collects the stages' seconds, which the ``swept`` and ``pr_opened`` reasons carry;
    ``policy``: the repository's own switches (``fixers.repo.policy``; default: every default).
    """
    run_id, clock = context.run_id, clock or StageClock()
    held = held_keys(settings, target.name)  # suppressed violations, one by one
    result = _fix(settings, context, worktree, server, held)
    clock.add(result.seconds)
    policy = policy or RepoPolicy()
    result, left = without_opted_out_paths(result, policy)
    note, all_left_out = left_out(left, result, policy)
    held_back_note, all_held = held_note(settings, run_id, result, held)
    swept_reason = f"{swept(result, target.base_sha)}{note}{held_back_note} {clock.summary()}"
    move(settings, run_id, RunState.SWEPT, swept_reason)
    for ended in (all_left_out, all_held):
        if ended is not None:
            stop(settings, run_id, ended)
            return
    written = write_fixes(worktree, result)
    if isinstance(written, Stop):
        stop(settings, run_id, written)
        return
    move(settings, run_id, RunState.PATCHED, f"{len(written)} file(s) changed")
    clock.restart()
    # An untrusted head's violations are its own, not the base's. A learned run is not checked
    # against the base's tip: that would learn again there (its own PR is found by its key).
    if target.untrusted is None and not context.learned:
        fixed_elsewhere = already_fixed(settings, context.contract, target, result)
        clock.lap("base check")
        if fixed_elsewhere is not None:
            stop(settings, run_id, fixed_elsewhere)
            return
    candidate = candidate_for(settings, context, target, worktree, result)
    clock.lap("compose")
    suppressed = held_back(settings, run_id, candidate)
    if suppressed is not None:
        stop(settings, run_id, suppressed)
        return
    if still_live(settings, run_id):  # else a duplicate delivery of this task finished it
        _publish(settings, context, target, candidate, result, policy, clock)


def _fix(
    settings: Settings,
    context: RunContext,
    worktree: Path,
    server: ImportServer | None,
    held: Mapping[str, int],
) -> FixResult:
    """The run's contract swept and fixed in ``worktree``, or, for a learned run, its break
    learned from the history and its misses fixed (``fixers.learned``). The import check runs
    in the target's own environment when its ``[verify]`` names one (the spare, warmed up in
    repairbot's interpreter, is then let go)."""
    python, problem = import_check_python(worktree, settings.environments_dir)
    if problem:
        log.warning(
            "run %s: import check in repairbot's own interpreter: %s", context.run_id, problem
        )
    if python != sys.executable and server is not None:
        server.close()
        server = None
    return fix(
        worktree,
        [] if context.learned else [context.contract],
        findings=context.break_findings,
        imports=True,
        sandbox=sandbox_options(settings),
        server=server,
        preload=settings.import_preload,
        held=lambda v: violation_key(v) in held,
        python=python,
    )


def _publish(
    settings: Settings,
    context: RunContext,
    target: Target,
    candidate: Candidate,
    result: FixResult,
    policy: RepoPolicy,
    clock: StageClock,
) -> None:
    """Open the fix (verified at once for ``pr+verify``), or only suggest it (``suggest``, and
    always for an untrusted head: nothing built on it is pushed)."""
    mode = policy.mode_for(context.signature)
    if mode is Autonomy.SUGGEST or target.untrusted is not None:
        offered = suggest(
            settings,
            context=context,
            target=target,
            candidate=candidate,
            result=result,
            why=target.untrusted.reason if target.untrusted else policy.why(context.signature),
        )
        stop(settings, context.run_id, offered)
        return
    try:
        outcome = target.forge.publish(candidate)
    except BranchGuarded as exc:  # our branch's last commits are bots' (branch_guard)
        stop(settings, context.run_id, Stop(RunState.LOOP_GUARDED, str(exc)))
        return
    except ProvenanceRefused as exc:  # a commit neither trusted nor ours (bot.forges.provenance)
        log.error("run %s: %s", context.run_id, exc)
        stop(settings, context.run_id, Stop(RunState.ERROR, str(exc)))
        return
    clock.lap("publish")
    note = clock.summary()
    if mode is Autonomy.PR:
        note = f"{note}; {policy.why(context.signature)}: not verified automatically"
    record_publication(
        settings,
        context.run_id,
        outcome,
        note,
        notice_pr=target.notice_pr,
        verify=mode is Autonomy.PR_VERIFY,
    )
