"""When PRs get a contract check: their own events, and pushes that change a contract.

A PR is checked when it is opened, reopened, pushed to (``synchronize``) or retargeted (``edited``
with a new base). A push to a branch is compared, in a task of its own, contract by contract
before and after (the built-in ones, ``.repairbot.toml``'s and those inferred from
``__init_subclass__`` guards, as the sweep computes them); when they differ, every open PR into
that branch is checked again, at most ``contract_recheck_max_prs`` of them (most recently updated
first), spaced ``contract_recheck_spacing_s`` apart so that their statuses and reviews stay clear
of GitHub's secondary rate limits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.records.contract_checks import queue_check
from bot.db.records.opt_outs import opted_out
from bot.db.session import session_scope
from bot.forges.github.api import GitHubApi
from bot.forges.github.events import PullRequestEvent, PushEvent, is_bot_account
from bot.forges.github.mirror import sync_mirror
from bot.forges.github.retry import RateLimited
from bot.git import GitError
from bot.pipeline.contract_check.answer import answered
from bot.pipeline.contract_check.blobs import changed_paths, is_swept
from bot.pipeline.contract_check.sweep import commit_of, tree_of
from bot.pipeline.contract_check.tree import TreeOnDisk, tree_of_repository
from bot.pipeline.memory.loop_guard import guard_pull_request
from bot.pipeline.pull_requests import our_fix
from bot.pipeline.task_base import RepairbotTask, TransientError
from bot.queue import names as task_names
from bot.queue.celery_app import app
from bot.queue.starts import start_contract_check, start_contract_recheck
from fixers.contracts.model import BUILTIN_CONTRACTS, Contract, load_config
from fixers.sweep.index import RepoIndex

CHECKED_ACTIONS = frozenset({"opened", "synchronize", "reopened"})
NO_COMMIT = "0" * 40
# Open PRs listed beyond the cap, only to say how many were left out.
COUNTED_BEYOND_CAP = 200


def on_pull_request(
    session: Session, settings: Settings, event: PullRequestEvent, *, base_changed: bool
) -> str:
    """Queue the check of the PR an event is about, when the event can change the answer."""
    if not settings.contract_check:
        return "contract checks are off (REPAIRBOT_CONTRACT_CHECK)"
    if event.action not in CHECKED_ACTIONS and not (event.action == "edited" and base_changed):
        return f"{event.action}: no contract check needed"
    if is_bot_account(settings, event.author) or our_fix(session, event) is not None:
        return f"#{event.number} is one of ours: its own pipeline checks it"
    left_alone = opted_out(session, repository=event.repository, pr_number=event.number)
    if left_alone is not None:
        return f"not checked: {left_alone.describe()}"
    guarded = guard_pull_request(session, settings, event)  # a bot pushed: budgeted
    if guarded is not None:
        return guarded
    # Answered from the payload's own SHAs: no REST call, no fetch for a head already checked.
    if event.base_sha and answered(
        session, event.repository, event.number, event.head_sha, event.base_sha
    ):
        return f"{event.head_sha[:12]} on {event.base_sha[:12]} was answered"
    return queue_pull_check(session, event.repository, event.number)


def queue_pull_check(session: Session, repository: str, number: int, **options: Any) -> str:
    """Queue a check of PR ``number`` once ``session`` commits, unless one is queued and not
    started yet (it will read the PR's head when it starts: one check answers a flood)."""
    if not queue_check(session, repository=repository, number=number):
        return f"a check of #{number} is queued already"
    start_contract_check(session, repository, number, **options)
    return f"contract check of #{number} queued"


def _fingerprint(on_disk: TreeOnDisk) -> dict[tuple[object, ...], Contract]:
    """Every contract of the tree on disk, by what it says (not where it was found)."""
    config = load_config(on_disk.root)
    index = RepoIndex(
        on_disk.root, on_disk.cache, config.exclude, max_file_bytes=config.max_file_bytes
    )
    contracts = [*BUILTIN_CONTRACTS, *config.contracts, *index.inferred_contracts()]
    return {
        (c.name, c.base, c.forbidden, c.hook, c.restore_hook, c.metadata_params, c.base_module): c
        for c in contracts
    }


def contract_changes(
    settings: Settings, repository: str, mirror: Path, before: str, after: str
) -> list[str]:
    """The contracts that a push from ``before`` to ``after`` added or removed, described."""
    old_tree, new_tree = tree_of(mirror, before), tree_of(mirror, after)
    if not any(is_swept(path) for path in changed_paths(mirror, old_tree, new_tree)):
        return []
    with tree_of_repository(settings.contract_trees_dir, repository) as on_disk:
        # ``before`` first: the checks this push queues then start from ``after`` on disk.
        on_disk.move_to(mirror, old_tree)
        old = _fingerprint(on_disk)
        on_disk.move_to(mirror, new_tree)
        new = _fingerprint(on_disk)
    added = [f"new {new[key].describe()}" for key in new.keys() - old.keys()]
    removed = [f"dropped {old[key].describe()}" for key in old.keys() - new.keys()]
    return sorted(added) + sorted(removed)


def on_push(session: Session, settings: Settings, push: PushEvent) -> str:
    """Queue the contract comparison of a push to a branch (its work is a task of its own: this
    runs inside the delivery's transaction, which must not wait on git and a sweep)."""
    if not settings.contract_check:
        return "contract checks are off (REPAIRBOT_CONTRACT_CHECK)"
    if not push.ref.startswith("refs/heads/") or push.deleted or push.after == NO_COMMIT:
        return f"{push.ref}: not a branch that moved"
    branch = push.ref.removeprefix("refs/heads/")
    if push.created or push.before == NO_COMMIT:
        return f"{branch} is new: no PR targets it yet"
    start_contract_recheck(session, push.repository, branch, push.before, push.after)
    return f"contract comparison of {push.before[:12]}..{push.after[:12]} on {branch} queued"


@app.task(name=task_names.CONTRACT_RECHECK, base=RepairbotTask, bind=True)
def contract_recheck(
    self: RepairbotTask, repository: str, branch: str, before: str, after: str
) -> str:
    """Compare the contracts of a push and re-check the open PRs into its branch; safe to rerun
    (a PR already answered for its head on this base posts nothing)."""
    try:
        return recheck(self.settings, GitHubApi(self.settings), repository, branch, before, after)
    except (RateLimited, httpx.TransportError) as exc:
        raise TransientError(f"contract recheck of {repository} {branch}: {exc}") from exc


def recheck(
    settings: Settings, api: GitHubApi, repository: str, branch: str, before: str, after: str
) -> str:
    """Re-check the open PRs into ``branch`` when its push from ``before`` to ``after`` changed a
    contract; says how many checks were queued and how many PRs left out."""
    cap = settings.contract_recheck_max_prs
    pulls = [
        p
        for p in api.open_pulls(repository, limit=cap + COUNTED_BEYOND_CAP, base=branch)
        if not is_bot_account(settings, p.author)
    ]
    if not pulls:
        return f"no open PR into {branch}: nothing to re-check"
    try:
        mirror = sync_mirror(settings, repository, api.token())
    except GitError as exc:
        raise TransientError(str(exc)) from exc
    if commit_of(mirror, after) is None:  # moved again since: that push's comparison counts
        return f"{after[:12]} is no longer on {branch}: nothing to compare"
    if commit_of(mirror, before) is None:  # force-pushed away before we ever fetched it
        changes = [f"{branch} before the push is unknown, so any contract may have changed"]
    else:
        changes = contract_changes(settings, repository, mirror, before, after)
    if not changes:
        return f"push to {branch} changes no contract"
    queued, left = pulls[:cap], len(pulls) - min(len(pulls), cap)
    with session_scope(settings.resolved_database_url) as session:
        for i, pull in enumerate(queued):
            spacing = i * settings.contract_recheck_spacing_s or None
            queue_pull_check(session, repository, pull.number, countdown=spacing)
    return (
        f"push to {branch}: {'; '.join(changes)}; re-checking {len(queued)} open PR(s) "
        f"into {branch}, {left} left out (at most {cap} per push)"
    )
