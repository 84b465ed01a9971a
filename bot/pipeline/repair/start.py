"""The start of a repair attempt: refuse a run that keeps dying, count the attempt, and read once
what the repair needs from the database (typed, through ``bot.db.rows``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.config import Settings
from bot.db.crud import move_run
from bot.db.models import RepairRun, RunState, utcnow
from bot.db.rows import contract_of, findings_of
from bot.db.session import session_scope
from bot.forges.pr_text import TitleStyle, ticket_for
from bot.pipeline.reconcile.lost_runs import no_more_attempts
from bot.pipeline.repair.plan import contract_fixed, fixable_tests
from fixers.classify.failures import Finding
from fixers.contracts.model import Contract
from fixers.learned.breaks import LEARNED_SOURCE, findings_of_break

NO_CONTRACT = "the run names no contract to repair"


@dataclass(frozen=True)
class RunContext:
    """What the repair needs from the database, read once at the start."""

    run_id: int
    own_fix: int | None  # the fix an earlier, killed attempt recorded (None: none)
    signature: str
    contract: Contract
    repository: str | None
    commit: str
    base_ref: str | None
    build_url: str | None
    classes: list[str]
    tests: list[str]
    ticket: str
    attempts: int
    pr_number: int | None = None  # the PR whose pipeline failed (None: a branch pipeline)
    # A learned-migration run's findings: the break its rule is learned for (fixers.learned).
    break_findings: list[Finding] = field(default_factory=list)

    @property
    def learned(self) -> bool:
        """Whether this run learns its migration from history rather than a known contract."""
        return self.contract.source == LEARNED_SOURCE


def title_style(settings: Settings) -> TitleStyle:
    """The configured PR title convention."""
    return TitleStyle(
        template=settings.pr_title_template,
        type=settings.pr_type,
        default_ticket=settings.pr_ticket_default,
        bug_link_pattern=settings.pr_bug_link_pattern,
    )


def start_attempt(settings: Settings, run_id: int) -> RunContext | None:
    """Count a new attempt at run ``run_id`` and read its context; None when there is nothing to
    do (no such run, a finished one, or one refused here with the reason recorded)."""
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
        contract = contract_of(run)
        if contract is None:
            move_run(session, run=run, to=RunState.ERROR, reason=NO_CONTRACT)
            return None
        run.attempts += 1
        run.updated_at = utcnow()  # a start is progress: the reconciler's clock starts again
        return _context(settings, run, contract)


def _context(settings: Settings, run: RepairRun, contract: Contract) -> RunContext:
    report = run.report
    findings = findings_of(report)
    learned = findings_of_break(contract, findings) if contract.source == LEARNED_SOURCE else []
    if learned:  # a learned run answers for its own break's classes and tests
        classes = sorted({f.class_name for f in learned if f.class_name})
        tests = sorted({t for f in learned for t in f.tests})
    else:
        classes = sorted({f.class_name for f in findings if f.class_name and contract_fixed(f)})
        tests = fixable_tests(findings)
    return RunContext(
        run_id=run.id,
        own_fix=run.fix_id,
        signature=run.signature,
        contract=contract,
        repository=report.repository,
        commit=report.head_sha or report.base_sha or report.base_ref or "HEAD",
        base_ref=report.base_ref,
        build_url=report.build_url,
        classes=classes,
        tests=tests,
        ticket=ticket_for(
            [text for f in findings for text in (f.message, f.evidence)], title_style(settings)
        ),
        attempts=run.attempts,
        pr_number=report.pr_number,
        break_findings=learned,
    )


def give_back_attempt(settings: Settings, run_id: int) -> None:
    """Run ``run_id``'s attempt ended cleanly before its work was done (the GitHub write budget
    was spent): it does not count towards the attempts that end a run."""
    with session_scope(settings.resolved_database_url) as session:
        run = session.get_one(RepairRun, run_id)
        run.attempts = max(run.attempts - 1, 0)
