"""Stage 2: sweep the failing commit, apply every fix, and open one PR per root cause.

Each state change commits in its own short transaction: the git and LibCST work in between holds
no database lock, and a crash anywhere leaves a state the reconciler can resume from. Rerunning
is safe: the worktree is made afresh, the branch name is derived from the dedupe key, and the
unique index on open fixes refuses a second PR for the same violations.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from uuid import uuid4

from sqlalchemy.exc import IntegrityError

from bot.already_fixed import fixed_on_base
from bot.config import Settings
from bot.db.crud import move_run, open_fix_with_key
from bot.db.models import Fix, RepairRun, RunState, utcnow
from bot.db.session import session_scope
from bot.forge.git import (
    GitError,
    commit_all,
    diff,
    fresh_worktree,
    remove_worktree,
    resolve_commit,
    set_branch,
)
from bot.forge.github import GitHubForge
from bot.forge.local import RepositoryRefused, base_ref_problem, resolve_local_repository
from bot.forge.pr_text import PullRequestText, TitleStyle, compose, fixed_violations, ticket_for
from bot.github.client import GitHubNotConfigured
from bot.github.mirror import is_github_repository, sync_mirror
from bot.github.publish import Candidate, publish, violation_key
from bot.github.retry import RateLimited
from bot.repair_plan import branch_name, contract_from_dict, dedupe_key
from bot.runner.requests import request_verification
from bot.runner.sandbox import sandbox_options
from bot.runner.workdirs import leased
from bot.tasks.base import RepairbotTask, TransientError
from bot.tasks.celery_app import app
from bot.tasks.lost_runs import no_more_attempts
from fixers.outcome import FixResult
from fixers.sweep import fix, write_changes

OUT_OF_MEMORY = "ran out of memory"


@dataclass(frozen=True)
class RunContext:
    """What the repair needs from the database, read once at the start."""

    run_id: int
    signature: str
    contract: dict[str, object]
    repository: str | None
    commit: str
    base_ref: str | None
    build_url: str | None
    classes: list[str]
    tests: list[str]
    ticket: str
    attempts: int


def _start(settings: Settings, run_id: int) -> RunContext | None:
    with session_scope(settings.resolved_database_url) as session:
        run = session.get(RepairRun, run_id)
        if run is None or RunState(run.state).terminal:
            return None
        # A worker that is killed mid-task gets its message back at once (acks_late and
        # reject_on_worker_lost): without these checks a repair that always exhausts the
        # worker's memory would be redelivered into the same death for ever.
        refusal = no_more_attempts(run, settings.worktrees_dir.resolve(), settings.task_max_retries)
        if refusal is not None:
            state, reason = refusal
            move_run(session, run=run, to=state, reason=reason)
            return None
        run.attempts += 1
        run.updated_at = utcnow()  # a start is progress: the reconciler's clock starts again
        report = run.report
        classes = sorted(
            {f["class_name"] for f in report.findings if f.get("class_name") and f.get("fixer")}
        )
        tests = sorted({t for f in report.findings if f.get("fixer") for t in f.get("tests", [])})
        texts = [str(f.get(k) or "") for f in report.findings for k in ("message", "evidence")]
        return RunContext(
            run_id=run.id,
            signature=run.signature,
            contract=dict(run.contract),
            repository=report.repository,
            commit=report.head_sha or report.base_sha or report.base_ref or "HEAD",
            base_ref=report.base_ref,
            build_url=report.build_url,
            classes=classes,
            tests=tests,
            ticket=ticket_for(texts, title_style(settings)),
            attempts=run.attempts,
        )


def title_style(settings: Settings) -> TitleStyle:
    """The configured PR title convention."""
    return TitleStyle(
        template=settings.pr_title_template,
        type=settings.pr_type,
        default_ticket=settings.pr_ticket_default,
        bug_link_pattern=settings.pr_bug_link_pattern,
    )


def _move(settings: Settings, run_id: int, to: RunState, reason: str = "") -> None:
    with session_scope(settings.resolved_database_url) as session:
        move_run(session, run=session.get_one(RepairRun, run_id), to=to, reason=reason)


@app.task(name="repairbot.repair", base=RepairbotTask, bind=True)
def repair(self: RepairbotTask, run_id: int) -> None:
    """Repair run ``run_id`` end to end, up to a recorded PR (or a reason why none)."""
    settings = self.settings
    context = _start(settings, run_id)
    if context is None:
        return
    if is_github_repository(context.repository):
        _repair_on_github(settings, context)
        return
    try:
        repository = resolve_local_repository(
            context.repository, settings.local_repository_roots, settings.private_dirs
        )
        base_sha = repository.commit(context.commit)
    except (RepositoryRefused, GitError) as exc:
        _move(settings, run_id, RunState.ERROR, str(exc))
        return
    refused = base_ref_problem(repository.path, context.base_ref)
    if refused is not None:
        _move(settings, run_id, RunState.ERROR, refused)
        return
    _within_memory(settings, context, repository.path, base_sha, None)


def _within_memory(
    settings: Settings, context: RunContext, repo: Path, base_sha: str, github: GitHub | None
) -> None:
    """The repair; one that runs out of memory fails for good (a retry would do the same)."""
    try:
        _in_worktree(settings, context, repo, base_sha, github)
    except MemoryError:
        _move(
            settings,
            context.run_id,
            RunState.FAILED,
            f"{OUT_OF_MEMORY} during attempt {context.attempts}: not retried (a file too large "
            "to parse? see max_file_bytes in .repairbot.toml)",
        )


def _in_worktree(
    settings: Settings, context: RunContext, repo: Path, base_sha: str, github: GitHub | None
) -> None:
    # One worktree per attempt: a re-enqueued duplicate of a slow run must not share it.
    worktree = settings.worktrees_dir.resolve() / f"run-{context.run_id}-{uuid4().hex[:8]}"
    # Leased: if this process is killed, the next start prunes the worktree (bot.runner.workdirs).
    with leased(worktree):
        try:
            fresh_worktree(repo, worktree, base_sha)
            _repair_in(settings, context, repo, worktree, base_sha, github)
        except GitError as exc:
            raise TransientError(str(exc)) from exc
        except RateLimited as exc:
            raise TransientError(str(exc)) from exc
        finally:
            remove_worktree(repo, worktree)


@dataclass(frozen=True)
class GitHub:
    """The GitHub side of a repair: the forge, the repository name and its base branch."""

    forge: GitHubForge
    repository: str
    base_ref: str


def _repair_on_github(settings: Settings, context: RunContext) -> None:
    """Fetch ``owner/name`` into its mirror, then repair there and publish through GitHub."""
    name = context.repository or ""
    try:
        forge = GitHubForge(settings)
        mirror = sync_mirror(settings, name, forge.token())
        base_sha = resolve_commit(mirror, context.commit)
        base_ref = context.base_ref or forge.default_branch(name)
    except GitHubNotConfigured as exc:
        _move(settings, context.run_id, RunState.ERROR, str(exc))
        return
    except GitError as exc:
        if context.attempts >= settings.task_max_retries:
            _move(settings, context.run_id, RunState.ERROR, str(exc))
            return
        raise TransientError(str(exc)) from exc
    except RateLimited as exc:
        raise TransientError(str(exc)) from exc
    refused = base_ref_problem(mirror, base_ref)
    if refused is not None:
        _move(settings, context.run_id, RunState.ERROR, refused)
        return
    _within_memory(settings, context, mirror, base_sha, GitHub(forge, name, base_ref))


def _repair_in(
    settings: Settings,
    context: RunContext,
    repo: Path,
    worktree: Path,
    base_sha: str,
    github: GitHub | None,
) -> None:
    contract = contract_from_dict(context.contract)
    result = fix(worktree, [contract], imports=True, sandbox=sandbox_options(settings))
    violations = result.report.violations
    _move(
        settings,
        context.run_id,
        RunState.SWEPT,
        f"{len(violations)} violation(s) at {base_sha[:12]}",
    )
    if not result.changes:
        reason = "no violations of the contract at the failing commit"
        if violations:
            reason = (
                "violations found, none fixable automatically: "
                + "; ".join(f"{v.location()} {v.class_qualname} ({v.kind})" for v in violations)[
                    :2000
                ]
            )
        _move(
            settings,
            context.run_id,
            RunState.NO_FIX_NEEDED if not violations else RunState.FAILED,
            reason,
        )
        return
    written = write_changes(worktree, result)
    if not written:
        _move(
            settings,
            context.run_id,
            RunState.FAILED,
            "no change passed its safety evidence: "
            + "; ".join(s.reason for s in result.skips)[:2000],
        )
        return
    _move(settings, context.run_id, RunState.PATCHED, f"{len(written)} file(s) changed")
    _pause_for_tests(settings)
    identities = [
        violation_key(v.kind, v.class_qualname, v.path) for v in violations if v.fix is not None
    ]
    repo_name = github.repository if github else str(repo)
    base_ref = github.base_ref if github else context.base_ref
    fixed_by = fixed_on_base(
        repo=repo,
        failing_sha=base_sha,
        base_ref=base_ref,
        contract=contract,
        violation_keys=identities,
        files=[c.path for c in result.changes],
        worktrees_dir=settings.worktrees_dir.resolve(),
    )
    if fixed_by is not None:
        _move(settings, context.run_id, RunState.NO_FIX_NEEDED, fixed_by)
        return
    key = dedupe_key(
        repository=repo_name, base_ref=base_ref, contract=contract, violations=identities
    )
    text = compose(
        contract=contract,
        result=result,
        signature=context.signature,
        classes_in_log=context.classes,
        tests=context.tests,
        build_url=context.build_url,
        base_sha=base_sha,
        repo_root=worktree,
        ticket=context.ticket,
        style=title_style(settings),
    )
    if github is not None:
        publish(
            settings,
            github.forge,
            Candidate(
                run_id=context.run_id,
                repository=github.repository,
                mirror=repo,
                worktree=worktree,
                base_sha=base_sha,
                base_ref=github.base_ref,
                key=key,
                contract_key=dedupe_key(
                    repository=repo_name, base_ref=base_ref, contract=contract, violations=[]
                ),
                contract=contract,
                signature=context.signature,
                branch=branch_name(context.signature, key),
                violation_keys=sorted(set(identities)),
                violations=fixed_violations(result),
                files=[c.path for c in result.changes],
                text=text,
            ),
        )
        return
    with session_scope(settings.resolved_database_url) as session:
        run = session.get_one(RepairRun, context.run_id)
        existing = open_fix_with_key(session, dedupe_key=key)
        if existing is not None:
            run.fix_id = existing.id
            move_run(
                session,
                run=run,
                to=RunState.DUPLICATE,
                reason=f"fix #{existing.id} already covers it",
            )
            return
    head = commit_all(worktree, text.commit_message)
    branch = branch_name(context.signature, key)
    set_branch(repo, branch, head)
    _record_fix(settings, context, repo, key, branch, base_sha, head, text, result)


def _record_fix(
    settings: Settings,
    context: RunContext,
    repo: Path,
    key: str,
    branch: str,
    base_sha: str,
    head: str,
    text: PullRequestText,
    result: FixResult,
) -> None:
    with session_scope(settings.resolved_database_url) as session:
        run = session.get_one(RepairRun, context.run_id)
        fix_row = Fix(
            forge="local",
            repository=str(repo),
            dedupe_key=key,
            signature=context.signature,
            base_ref=context.base_ref,
            base_sha=base_sha,
            branch=branch,
            head_sha=head,
            title=text.title,
            body=text.body,
            files=[c.path for c in result.changes],
            violations=fixed_violations(result),
            diff=diff(repo, base_sha, head),
        )
        if RunState(run.state).terminal:
            return  # a duplicate delivery of this task finished the run first
        try:
            with session.begin_nested():
                session.add(fix_row)
        except IntegrityError:
            existing = open_fix_with_key(session, dedupe_key=key)
            run.fix_id = existing.id if existing else None
            move_run(
                session,
                run=run,
                to=RunState.DUPLICATE,
                reason="another run opened the same fix first",
            )
            return
        fix_row.number = fix_row.id
        fix_row.url = f"{settings.public_url}/fixes/{fix_row.id}"
        run.fix_id = fix_row.id
        move_run(session, run=run, to=RunState.PR_OPENED, reason=f"fix #{fix_row.id} on {branch}")
        # The bot authored this branch, so it is trusted: verify it at once.
        request_verification(
            session,
            fix=fix_row,
            requested_by="repairbot (automatic)",
            default_queue=settings.verify_default_queue,
        )


def _pause_for_tests(settings: Settings) -> None:
    """The crash-recovery test holds the repair here while its pause file exists."""
    pause = settings.test_pause_file
    while pause is not None and pause.exists():
        time.sleep(0.05)
