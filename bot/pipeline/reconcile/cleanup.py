"""At start: remove the work dirs and worktree registrations that a crash left behind."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select

from bot.config import Settings
from bot.db.models import Fix
from bot.db.session import session_scope
from bot.pipeline.repair.import_spare import SPARE_PREFIX
from bot.runner.workdirs import forget_missing_worktrees, prune_root

log = logging.getLogger(__name__)

REPAIR_PREFIX = "run-"  # bot.pipeline.repair.task's worktrees, in the data dir
VERIFICATION_PREFIX = "verification-"  # bot.pipeline.verify.task's run dirs, in the runner dir


@dataclass(frozen=True)
class Pruned:
    """What a prune removed, and the repositories whose registrations it refreshed."""

    work_dirs: list[Path] = field(default_factory=list)
    repositories: list[Path] = field(default_factory=list)


def known_repositories(settings: Settings) -> set[Path]:
    """Local repositories we made fixes in, and our GitHub mirrors: where our worktrees were
    registered. Only these are touched (never a path merely named in a report)."""
    with session_scope(settings.resolved_database_url) as session:
        local = session.scalars(select(Fix.repository).where(Fix.forge == "local").distinct()).all()
    candidates = {Path(path) for path in local if path and Path(path).is_absolute()}
    candidates |= set(settings.github_mirrors_dir.glob("*/*.git"))
    return {path for path in candidates if path.is_dir()}


def prune_stale_work(settings: Settings) -> Pruned:
    """Remove every repair worktree and verification run dir that no live process leases, then
    let each known repository forget worktrees whose directory is gone (``git worktree
    prune``: also those whose directory was deleted by hand, or with a wiped temp dir).

    Safe while other workers on this host run: their directories are leased.
    """
    removed = prune_root(settings.worktrees_dir.resolve(), prefixes=[REPAIR_PREFIX, SPARE_PREFIX])
    removed += prune_root(settings.runner_root.resolve(), prefixes=[VERIFICATION_PREFIX])
    repositories = sorted(known_repositories(settings))
    for repo in repositories:
        forget_missing_worktrees(repo)
    if removed:
        log.warning("pruned %d stale work dir(s): %s", len(removed), ", ".join(map(str, removed)))
    return Pruned(removed, repositories)
