"""Where a repair happens and where its fix goes: a local repository, or a GitHub one through
its mirror. Each is checked before anything in it is touched."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bot.config import Settings
from bot.db.models import RunState
from bot.forges.base import Forge
from bot.forges.github.client import GitHubNotConfigured
from bot.forges.github.forge import GitHubForge
from bot.forges.github.mirror import is_github_repository, sync_mirror
from bot.forges.github.retry import RateLimited
from bot.forges.local.forge import LocalForge
from bot.forges.local.repository import (
    RepositoryRefused,
    base_ref_problem,
    resolve_local_repository,
)
from bot.git import GitError, resolve_commit
from bot.pipeline.pr_pipeline import base_commit_for
from bot.pipeline.repair_start import RunContext
from bot.pipeline.run_state import Stop
from bot.pipeline.task_base import TransientError


@dataclass(frozen=True)
class Target:
    """The repository to repair, resolved: its forge, its name there, and the commits."""

    forge: Forge
    name: str  # ``owner/name`` on GitHub; the repository's path for the local forge
    repo: Path  # the git repository worktrees are made from: the target, or its mirror
    base_sha: str  # the commit repaired: the failing one, or the base head (``notice_pr``)
    base_ref: str | None  # the branch the fix is for
    # The PR whose pipeline failed because of a violation on the base branch: ``base_sha`` is
    # then the base head, and the PR is told which fix carries it (bot.pipeline.fan_out).
    notice_pr: int | None = None


def resolve_target(settings: Settings, context: RunContext) -> Target | Stop:
    """The run's repository, checked; a ``Stop`` (error) when it is refused."""
    if is_github_repository(context.repository):
        return _on_github(settings, context)
    return _on_disk(settings, context)


def _on_disk(settings: Settings, context: RunContext) -> Target | Stop:
    try:
        repository = resolve_local_repository(
            context.repository, settings.local_repository_roots, settings.private_dirs
        )
        base_sha = repository.commit(context.commit)
    except (RepositoryRefused, GitError) as exc:
        return Stop(RunState.ERROR, str(exc))
    refused = base_ref_problem(repository.path, context.base_ref)
    if refused is not None:
        return Stop(RunState.ERROR, refused)
    return Target(
        LocalForge(settings), str(repository.path), repository.path, base_sha, context.base_ref
    )


def _on_github(settings: Settings, context: RunContext) -> Target | Stop:
    """Fetch ``owner/name`` into its mirror; the repair happens there."""
    name = context.repository or ""
    try:
        forge = GitHubForge(settings)
        mirror = sync_mirror(settings, name, forge.token())
        base_ref = context.base_ref or forge.default_branch(name)
        on_base = _base_commit(settings, context, mirror, base_ref)
        base_sha = on_base or resolve_commit(mirror, context.commit)
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
    return Target(forge, name, mirror, base_sha, base_ref, context.pr_number if on_base else None)


def _base_commit(
    settings: Settings, context: RunContext, mirror: Path, base_ref: str
) -> str | None:
    """For a PR pipeline's failure: the base head when the root cause is there (None: not a
    PR's, or the violations are the PR's own; see ``bot.pipeline.pr_pipeline``)."""
    if context.pr_number is None:
        return None
    return base_commit_for(
        repo=mirror,
        base_ref=base_ref,
        contract=context.contract,
        classes=context.classes,
        worktrees_dir=settings.worktrees_dir.resolve(),
    )
