"""Where a repair happens and where its fix goes: a local repository, or a GitHub one through
its mirror. Each is checked before anything in it is touched.

Provenance decides the commit repaired (``bot.forges.provenance``): the failing commit when a
trusted branch (the base, when it is the default branch or a configured one) reaches it; the
base branch's tip when the failure's root cause is there (a PR's pipeline, or a fork's job,
failing for the base's violation); otherwise the failing commit is **untrusted** (a fork's or a
PR branch's): the run may only review or suggest, and nothing built on it is ever pushed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from gitlab import GitlabError

from bot.config import Settings
from bot.db.models import RunState
from bot.forges.base import Forge
from bot.forges.github.client import GitHubNotConfigured
from bot.forges.github.forge import GitHubForge
from bot.forges.github.mirror import is_github_repository, sync_mirror
from bot.forges.github.retry import RateLimited
from bot.forges.gitlab.events import project_path
from bot.forges.gitlab.forge import GitLabForge
from bot.forges.gitlab.remote import sync_mirror as sync_gitlab_mirror
from bot.forges.gitlab.rest import GitLabNotConfigured
from bot.forges.local.forge import LocalForge
from bot.forges.local.repository import (
    RepositoryRefused,
    base_ref_problem,
    resolve_local_repository,
)
from bot.forges.provenance import (
    branch_tip,
    checked_out_branch,
    is_trusted_branch,
    pulls_at,
    reaches,
)
from bot.git import GitError, resolve_commit
from bot.pipeline.fan_out.pr_pipeline import root_cause_at
from bot.pipeline.repair.run_state import Stop
from bot.pipeline.repair.start import RunContext
from bot.pipeline.task_base import TransientError


@dataclass(frozen=True)
class Untrusted:
    """The failing commit is on no trusted branch: a fork's or a PR branch's commit."""

    commit: str
    reason: str
    pr_number: int | None  # the PR whose head it is: the report's, or found among PR refs


@dataclass(frozen=True)
class Target:
    """The repository to repair, resolved: its forge, its name there, and the commits."""

    forge: Forge
    name: str  # ``owner/name`` on GitHub; the repository's path for the local forge
    repo: Path  # the git repository worktrees are made from: the target, or its mirror
    base_sha: str  # the commit repaired: the failing one, or the base head (``notice_pr``)
    base_ref: str | None  # the branch the fix is for
    # The PR whose pipeline failed because of a violation on the base branch: ``base_sha`` is
    # then the base head, and the PR is told which fix carries it (bot.pipeline.fan_out.task).
    notice_pr: int | None = None
    # The trusted branch's tip that reaches ``base_sha`` (None: the base is not trusted): what
    # every push is checked against, and where the configuration is read.
    trusted_tip: str | None = None
    untrusted: Untrusted | None = None


@dataclass(frozen=True)
class _Repository:
    """A resolved repository before the commit to repair is chosen."""

    forge: Forge
    name: str
    repo: Path
    base_ref: str | None
    default_branch: str | None
    pulls_at: Callable[[str], list[int]]


def resolve_target(settings: Settings, context: RunContext) -> Target | Stop:
    """The run's repository, checked, and the commit to repair; a ``Stop`` (error) when the
    repository is refused."""
    on_github = is_github_repository(context.repository)
    if settings.forge == "gitlab" and project_path(context.repository) is not None:
        found = _on_gitlab(settings, context)
    else:
        found = _on_github(settings, context) if on_github else _on_disk(settings, context)
    if isinstance(found, Stop):
        return found
    where, failing = found
    return _placed(settings, context, where, failing)


def _on_disk(settings: Settings, context: RunContext) -> tuple[_Repository, str] | Stop:
    try:
        repository = resolve_local_repository(
            context.repository, settings.local_repository_roots, settings.private_dirs
        )
        failing = repository.commit(context.commit)
    except (RepositoryRefused, GitError) as exc:
        return Stop(RunState.ERROR, str(exc))
    refused = base_ref_problem(repository.path, context.base_ref)
    if refused is not None:
        return Stop(RunState.ERROR, refused)
    where = _Repository(
        LocalForge(settings),
        str(repository.path),
        repository.path,
        context.base_ref,
        checked_out_branch(repository.path),
        lambda _commit: [],
    )
    return where, failing


def _on_github(settings: Settings, context: RunContext) -> tuple[_Repository, str] | Stop:
    """Fetch ``owner/name`` into its mirror; the repair happens there."""
    name = context.repository or ""
    try:
        forge = GitHubForge(settings)
        mirror = sync_mirror(settings, name, forge.token())
        default_branch = forge.default_branch(name)
        base_ref = context.base_ref or default_branch
        failing = resolve_commit(mirror, context.commit)
    except GitHubNotConfigured as exc:
        return Stop(RunState.ERROR, str(exc))
    except GitError as exc:
        if context.attempts >= settings.task_max_retries:
            return Stop(RunState.ERROR, str(exc))
        raise TransientError(str(exc)) from exc
    except RateLimited as exc:
        raise TransientError(str(exc)) from exc
    refused = base_ref_problem(mirror, base_ref)
    if refused is not None:
        return Stop(RunState.ERROR, refused)
    where = _Repository(
        forge, name, mirror, base_ref, default_branch, lambda commit: pulls_at(mirror, commit)
    )
    return where, failing


def _on_gitlab(settings: Settings, context: RunContext) -> tuple[_Repository, str] | Stop:
    """Fetch the GitLab project into its mirror; the repair happens there."""
    name = context.repository or ""
    try:
        forge = GitLabForge(settings)
        mirror = sync_gitlab_mirror(settings, name, forge.token())
        default_branch = forge.default_branch(name)
        failing = resolve_commit(mirror, context.commit)
    except GitLabNotConfigured as exc:
        return Stop(RunState.ERROR, str(exc))
    except (GitError, GitlabError) as exc:
        if context.attempts >= settings.task_max_retries:
            return Stop(RunState.ERROR, str(exc))
        raise TransientError(str(exc)) from exc
    base_ref = context.base_ref or default_branch
    refused = base_ref_problem(mirror, base_ref)
    if refused is not None:
        return Stop(RunState.ERROR, refused)
    return _Repository(forge, name, mirror, base_ref, default_branch, lambda _commit: []), failing


def _trusted_tip(settings: Settings, where: _Repository) -> tuple[str | None, str]:
    """The base branch's tip when that branch is trusted, and how the base is named."""
    if where.base_ref is None:  # a local report naming no branch: the operator's checkout
        try:
            return resolve_commit(where.repo, "HEAD"), "the checked-out HEAD"
        except GitError:
            return None, "HEAD"
    trusted = is_trusted_branch(
        where.base_ref, default_branch=where.default_branch, patterns=settings.trusted_branches
    )
    return (branch_tip(where.repo, where.base_ref) if trusted else None), where.base_ref


def _placed(settings: Settings, context: RunContext, where: _Repository, failing: str) -> Target:
    """The commit to repair, by provenance (see the module docstring)."""
    tip, base_name = _trusted_tip(settings, where)
    on_base = tip is not None and reaches(where.repo, tip, failing)

    at_failing = Target(
        where.forge, where.name, where.repo, failing, where.base_ref, trusted_tip=tip
    )
    if on_base and context.pr_number is None:
        return at_failing
    pulls = [context.pr_number] if context.pr_number is not None else where.pulls_at(failing)
    pr = pulls[0] if pulls else None
    if tip is not None and root_cause_at(
        repo=where.repo,
        commit=tip,
        contract=context.contract,
        classes=context.classes,
        worktrees_dir=settings.worktrees_dir.resolve(),
    ):
        return replace(at_failing, base_sha=tip, notice_pr=pr)
    if on_base:
        return at_failing
    why = _why_untrusted(where, tip, base_name, failing)
    return replace(at_failing, untrusted=Untrusted(failing, why, pr))


def _why_untrusted(where: _Repository, tip: str | None, base_name: str, failing: str) -> str:
    if tip is None:
        return (
            f"{failing[:12]} is not built on a trusted branch: {base_name} is neither the default "
            f"branch ({where.default_branch or 'unknown'}) nor one of REPAIRBOT_TRUSTED_BRANCHES"
        )
    return (
        f"{failing[:12]} is not on {base_name} (a fork's or a PR branch's commit) and "
        f"{base_name} at {tip[:12]} does not have the violation: nothing built on it is pushed"
    )
