"""What a repository and its PRs allow a repair: opt-outs and autonomy, checked where they apply.

- A PR opted out (``bot.db.records.opt_outs``: its author's ``/repairbot opt-out`` or its label):
  the run ends ``opted_out`` before anything is fetched, and again right before a suggestion.
- The repository's policy (``fixers.repo.policy``) is read from ``.repairbot.toml`` on the base
  branch (the trusted side; never the PR head, which could raise its own autonomy): switched
  off → ``opted_out``; autonomy ``report`` → ``reported`` after classification, nothing swept;
  ``opt_out_paths`` drop the violations under them from the fix, and the run says how many;
  ``suggest`` → the fix as a comment on the failing PR (or recorded on the run), no PR;
  ``pr`` → the fix PR is opened without the automatic verification.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from bot.config import Settings
from bot.db.models import RunState
from bot.db.records.opt_outs import opted_out
from bot.db.session import session_scope
from bot.forges.base import Candidate
from bot.forges.github.api import GitHubApi
from bot.forges.provenance import branch_tip
from bot.pipeline.repair.run_state import Stop
from bot.pipeline.repair.start import RunContext
from bot.pipeline.repair.target import Target, resolve_target
from bot.pipeline.repair.trusted_config import config_text
from fixers.contracts.model import CONFIG_FILE, Contract
from fixers.repo.policy import Autonomy, RepoPolicy, parse_policy
from fixers.sweep.outcome import FixResult

_REASON_DIFF_CHARS = 20_000
SUGGESTED_PATCH_CHARS = 60_000  # of the patch in a comment (GitHub takes 65,536 characters)


def pr_opted_out(settings: Settings, context: RunContext) -> Stop | None:
    """``opted_out`` when the failing PR is opted out (None: it is not, or no PR is named)."""
    with session_scope(settings.resolved_database_url) as session:
        row = opted_out(session, repository=context.repository, pr_number=context.pr_number)
        if row is None:
            return None
        return Stop(RunState.OPTED_OUT, f"{row.describe()}: no fix run, review or comment")


def trusted_commit(target: Target) -> str | None:
    """Where the repository's own switches are read: the trusted branch's tip, else the base
    branch's own tip (written only by people with write access; a base_ref that is a sha, a
    tag or a PR ref never passes for it)."""
    if target.trusted_tip is not None:
        return target.trusted_tip
    return branch_tip(target.repo, target.base_ref) if target.base_ref else None


def read_policy(repo: Path, commit: str, where: str) -> RepoPolicy:
    """The policy in ``.repairbot.toml`` at ``commit`` (a regular file, within the cap)."""
    source = f"{CONFIG_FILE} on {where}"
    text, problem = config_text(repo, commit, source)
    if text is None:
        return RepoPolicy(source=source, errors=(problem,) if problem else ())
    return parse_policy(text, source)


def policy_for(target: Target) -> RepoPolicy:
    """The repository's policy, read from its base branch."""
    commit = trusted_commit(target)
    if commit is None:
        problem = f"{CONFIG_FILE}: no base branch to read it from; the defaults apply"
        return RepoPolicy(errors=(problem,))
    return read_policy(target.repo, commit, f"{target.base_ref or 'HEAD'} at {commit[:12]}")


def allowed_target(settings: Settings, context: RunContext) -> tuple[Target, RepoPolicy] | Stop:
    """The run's repository and its policy, or where the run ends: its PR opted out (checked
    before anything is fetched), the repository refused, switched off, or set to ``report``."""
    opted = pr_opted_out(settings, context)
    if opted is not None:
        return opted
    target = resolve_target(settings, context)
    if isinstance(target, Stop):
        return target
    policy = policy_for(target)
    ended = before_repair(policy, context.signature)
    return ended if ended is not None else (target, policy)


def _problems(policy: RepoPolicy) -> str:
    return f" ({'; '.join(policy.errors)})" if policy.errors else ""


def before_repair(policy: RepoPolicy, signature: str) -> Stop | None:
    """The run's end when the repository is switched off or wants ``report`` (None: go on)."""
    if not policy.enabled:
        return Stop(
            RunState.OPTED_OUT,
            f"repairbot is switched off for this repository ([repairbot] enabled = false in "
            f"{policy.source}): nothing swept, fixed or posted",
        )
    if policy.mode_for(signature) is Autonomy.REPORT:
        return Stop(
            RunState.REPORTED,
            f"classified as {signature}; {policy.why(signature)}: nothing swept or opened"
            + _problems(policy),
        )
    return None


def without_opted_out_paths(result: FixResult, policy: RepoPolicy) -> tuple[FixResult, int]:
    """The fix without the violations (and changed files) under ``opt_out_paths``, and how many
    violations were left out."""
    violations = result.report.violations
    kept = [v for v in violations if not policy.opted_out(v.path)]
    if len(kept) == len(violations):
        return result, 0
    report = dataclasses.replace(result.report, violations=kept)
    changes = [c for c in result.changes if not policy.opted_out(c.path)]
    return dataclasses.replace(result, report=report, changes=changes), len(violations) - len(kept)


def left_out(count: int, result: FixResult, policy: RepoPolicy) -> tuple[str, Stop | None]:
    """What the ``swept`` reason adds (the policy's problems, the violations under opted-out
    paths), and the run's end when nothing else is left."""
    problems = "".join(f"; {error}" for error in policy.errors)
    if not count:
        return problems, None
    note = f"{problems}; {count} violation(s) left out under opt_out_paths of {policy.source}"
    if result.report.violations:
        return note, None
    patterns = ", ".join(policy.opt_out_paths)
    reason = f"all {count} violation(s) are under opt_out_paths ({patterns}): nothing fixed"
    return note, Stop(RunState.OPTED_OUT, reason)


def suggestion_text(violations: list[str], contract: Contract, patch: str, why: str) -> str:
    """The comment that carries the fix as a patch on the failing PR.

    The fence is longer than any run of backticks in the patch (a fixed docstring may hold
    three), and a patch too long for a comment is cut at a line and says so: a cut patch is
    not one ``git apply`` takes."""
    lines = "\n".join(f"- {line}" for line in violations)
    shown = patch
    if len(patch) > SUGGESTED_PATCH_CHARS:
        shown = patch[: patch.rfind("\n", 0, SUGGESTED_PATCH_CHARS) + 1]
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", shown)), default=0))
    how = (
        "The fix, as a patch (`git apply` takes it):"
        if shown == patch
        else f"The fix's patch is {len(patch):,} characters, too long for a comment; its first "
        f"{len(shown):,} (cut at a line: not a patch to apply as it is):"
    )
    return (
        f"**repairbot: a suggested fix** for {contract.describe()}.\n\n"
        f"{why}, so no fix PR is opened. The violations:\n\n{lines}\n\n"
        f"{how}\n\n{fence}diff\n{shown}{fence}\n"
    )


def suggest(
    settings: Settings,
    *,
    context: RunContext,
    target: Target,
    candidate: Candidate,
    result: FixResult,
    why: str,
) -> Stop:
    """``suggested``: the fix posted on the failing GitHub PR, or recorded on the run; ``why``
    says why no fix PR is opened (the autonomy setting, or an untrusted head)."""
    files = f"{len(result.changes)} file(s)"
    if isinstance(target.forge, GitHubApi) and context.pr_number is not None:
        opted = pr_opted_out(settings, context)  # the PR may have opted out since the start
        if opted is not None:
            return opted
        written = target.forge.post_comment(
            None,
            target.name,
            context.pr_number,
            suggestion_text(candidate.violations, candidate.contract, result.diff(), why),
            key=f"suggest:{target.name}:{context.pr_number}:{candidate.key}",
        )
        where = written.url or f"{target.name}#{context.pr_number}"
        return Stop(RunState.SUGGESTED, f"{why}: suggested on {where} ({files}), no fix PR")
    diff = result.diff()[:_REASON_DIFF_CHARS]
    return Stop(
        RunState.SUGGESTED,
        f"{why}: no fix PR; the suggested fix ({files}) is recorded here:\n{diff}",
    )
