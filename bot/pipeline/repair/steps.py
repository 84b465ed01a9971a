"""The steps of a repair after the sweep, each over typed inputs: write the fixes, check the base
branch, and make the candidate a forge publishes. A step that ends the run says so with a
``Stop``; recording it is the stage's (``bot.pipeline.repair.task``)."""

from __future__ import annotations

from pathlib import Path

from bot.config import Settings
from bot.db.models import RunState
from bot.db.rows import violation_keys
from bot.forges.base import Candidate
from bot.forges.pr_text import applied_codemods, compose, fixed_violations
from bot.pipeline.repair.already_fixed import fixed_on_base
from bot.pipeline.repair.plan import branch_name, dedupe_key
from bot.pipeline.repair.run_state import Stop
from bot.pipeline.repair.start import RunContext, title_style
from bot.pipeline.repair.target import Target
from fixers.contracts.model import Contract
from fixers.sweep.outcome import FixResult
from fixers.sweep.run import write_changes

_REASON_CHARS = 2000


def swept(result: FixResult, base_sha: str) -> str:
    """The reason of the ``swept`` state: how many violations, where."""
    return f"{len(result.report.violations)} violation(s) at {base_sha[:12]}"


def write_fixes(worktree: Path, result: FixResult) -> list[str] | Stop:
    """Write the fixes into the worktree: the files written, or why there are none."""
    violations = result.report.violations
    if not result.changes and not violations:
        return Stop(RunState.NO_FIX_NEEDED, "no violations of the contract at the failing commit")
    if not result.changes:
        found = "; ".join(f"{v.location()} {v.class_qualname} ({v.kind})" for v in violations)
        return Stop(
            RunState.FAILED,
            "violations found, none fixable automatically: " + found[:_REASON_CHARS],
        )
    written = write_changes(worktree, result)
    if not written:
        skipped = "; ".join(s.reason for s in result.skips)
        return Stop(
            RunState.FAILED, "no change passed its safety evidence: " + skipped[:_REASON_CHARS]
        )
    return written


def fixed_keys(result: FixResult) -> list[str]:
    """The identities of the violations the fixes fix."""
    return violation_keys(v for v in result.report.violations if v.fix is not None)


def already_fixed(
    settings: Settings, contract: Contract, target: Target, result: FixResult
) -> Stop | None:
    """``no_fix_needed`` when the base branch no longer has these violations (None: it does)."""
    fixed_by = fixed_on_base(
        repo=target.repo,
        failing_sha=target.base_sha,
        base_ref=target.base_ref,
        contract=contract,
        violation_keys=fixed_keys(result),
        files=[c.path for c in result.changes],
        worktrees_dir=settings.worktrees_dir.resolve(),
    )
    return None if fixed_by is None else Stop(RunState.NO_FIX_NEEDED, fixed_by)


def candidate_for(
    settings: Settings, context: RunContext, target: Target, worktree: Path, result: FixResult
) -> Candidate:
    """The fix as a forge publishes it: dedupe keys, branch, and the PR's text."""
    keys = fixed_keys(result)
    contract = context.contract
    key = dedupe_key(
        repository=target.name, base_ref=target.base_ref, contract=contract, violations=keys
    )
    text = compose(
        contract=contract,
        result=result,
        signature=context.signature,
        classes_in_log=context.classes,
        tests=context.tests,
        build_url=context.build_url,
        base_sha=target.base_sha,
        repo_root=worktree,
        ticket=context.ticket,
        style=title_style(settings),
    )
    return Candidate(
        run_id=context.run_id,
        own_fix=context.own_fix,
        repository=target.name,
        repo=target.repo,
        worktree=worktree,
        base_sha=target.base_sha,
        base_ref=target.base_ref,
        key=key,
        contract_key=dedupe_key(
            repository=target.name, base_ref=target.base_ref, contract=contract, violations=[]
        ),
        contract=contract,
        signature=context.signature,
        branch=branch_name(context.signature, key),
        violation_keys=keys,
        violations=fixed_violations(result),
        files=[c.path for c in result.changes],
        text=text,
        codemods=applied_codemods(result),
        trusted_tip=target.trusted_tip,
    )
