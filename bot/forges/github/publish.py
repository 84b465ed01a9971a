"""Publishing a fix on GitHub without ever duplicating one.

In order: an open fix of ours with the same violations (our database) → link to it; an open fix
of ours for the same contract → push a commit with the new fixes to its branch; an open PR on
GitHub by someone who may write to the repository that already fixes every one of our
violations (it touches our files and, at its head, the sweep no longer finds them) → link to
it; otherwise reserve the fix row (the unique index on open dedupe keys makes concurrent runs
agree), push the branch and open the PR. Every push carries only the trusted base's history and
the commits made here (``bot.forges.provenance.check_push``).

Only ``fixes`` rows are written here (and the run's link to the row it reserves, so that a
killed attempt resumes its own PR); the run's states are the pipeline's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from uuid import uuid4

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.crud import open_fix_with_key
from bot.db.models import Fix, FixState
from bot.db.rows import violation_key
from bot.db.session import session_scope
from bot.forges.base import Candidate, Extended, Linked, Opened, PublishOutcome
from bot.forges.branch_guard import BranchGuarded, push_refusal
from bot.forges.fix_rows import fix_row, insert_fix
from bot.forges.github.api import GitHubApi
from bot.forges.github.mirror import push_branch, sync_mirror
from bot.forges.github.pulls import WRITERS, PullInfo
from bot.forges.pr_text import applied_codemods, fixed_violations
from bot.forges.provenance import check_push, reaches
from bot.git import (
    GitError,
    commit_all,
    diff,
    fresh_worktree,
    git,
    remove_worktree,
    resolve_commit,
)
from fixers.contracts.model import Contract
from fixers.sweep.run import fix, sweep, write_changes


def remaining_violations(
    settings: Settings, mirror: Path, commit: str, contract: Contract, keys: list[str]
) -> set[str]:
    """Which of ``keys`` the sweep still finds at ``commit``."""
    worktree = settings.worktrees_dir.resolve() / f"check-{uuid4().hex[:10]}"
    try:
        fresh_worktree(mirror, worktree, commit)
        found = sweep(worktree, [contract])
    finally:
        remove_worktree(mirror, worktree)
    present = {violation_key(v) for v in found.violations}
    return set(keys) & present


def _trusted_author(api: GitHubApi, repository: str, pull: PullInfo) -> bool:
    """Whether a PR may stand in for our fix: its branch is in the repository itself (only
    writers push there), or its author may write to it. A stranger's PR that removes the
    violations (any way it likes) must not make the bot point everyone at it."""
    same_repository = (pull.head_repository or "").lower() == repository.lower()
    return same_repository or api.permission(repository, pull.author) in WRITERS


def covering_pull(settings: Settings, api: GitHubApi, c: Candidate) -> PullInfo | None:
    """An open PR (not ours, by someone who may write to the repository) that already fixes
    every violation this candidate fixes."""
    token = api.token()
    for pull in api.open_pulls(c.repository, limit=settings.github_dedupe_scan_limit):
        if pull.head_ref == c.branch or pull.base_ref != c.base_ref:
            continue
        if not set(c.files) <= set(api.pull_files(c.repository, pull.number)):
            continue
        if not _trusted_author(api, c.repository, pull):
            continue
        ref = f"refs/pull/{pull.number}/head"
        try:
            resolve_commit(c.repo, ref)
        except Exception:
            sync_mirror(settings, c.repository, token)
        if not remaining_violations(settings, c.repo, ref, c.contract, c.violation_keys):
            return pull
    return None


def publish(settings: Settings, api: GitHubApi, c: Candidate) -> PublishOutcome:
    """Link, extend or open: see the module docstring."""
    with session_scope(settings.resolved_database_url) as session:
        existing = open_fix_with_key(session, dedupe_key=c.key)
        resume = existing is not None and existing.id == c.own_fix
        if existing is not None and not resume:
            return Linked(
                existing.id,
                existing.url,
                f"fix #{existing.id} ({existing.url or 'being opened'}) covers it",
            )
        same_contract = None if resume else _open_fix_for_contract(session, c)
    if same_contract is not None:
        return extend(settings, api, c, same_contract)
    if resume and c.own_fix is not None:
        return _open(settings, api, c, c.own_fix)
    covering = covering_pull(settings, api, c)
    if covering is not None:
        why = f"open PR #{covering.number} by {covering.author} already fixes it"
        return Linked(None, covering.url, why)
    reserved = _reserve(settings, c)
    if isinstance(reserved, Linked):
        return reserved
    return _open(settings, api, c, reserved)


def _open_fix_for_contract(session: Session, c: Candidate) -> int | None:
    """Our open PR in this repository for the same contract, if any."""
    return session.scalar(
        select(Fix.id).where(
            Fix.forge == "github",
            Fix.repository == c.repository,
            Fix.contract_key == c.contract_key,
            Fix.state == FixState.OPEN.value,
            Fix.number.is_not(None),
        )
    )


def _reserve(settings: Settings, c: Candidate) -> int | Linked:
    """Insert our fix row, linked to the run, before anything reaches GitHub; the fix that
    covers it when another run got there first."""
    with session_scope(settings.resolved_database_url) as session:
        row = fix_row(c, forge="github", head_sha=c.base_sha, diff="")
        inserted = insert_fix(session, c, row, lost_race="another run is opening the same fix")
        return inserted if isinstance(inserted, Linked) else inserted.id


def _open(settings: Settings, api: GitHubApi, c: Candidate, fix_id: int) -> Opened:
    """Commit, push the branch and open the PR of the reserved fix ``fix_id`` (again, for a
    resumed run: the same commit is pushed again and the PR is opened once per fix row)."""
    assert c.base_ref is not None, "a GitHub candidate always names its base branch"
    with session_scope(settings.resolved_database_url) as session:
        reserved_at = session.get_one(Fix, fix_id).created_at
    # Dated by the fix row: redone after a crash, the same changes are the same commit, so the
    # forced push below re-pushes what is on GitHub already (a no-op) and the PR keeps its head.
    head = commit_all(c.worktree, c.text.commit_message, at=reserved_at)
    check_push(
        c.repo, head, trusted=[c.trusted_tip or ""], made={head}, where=f"{c.repository} {c.branch}"
    )
    push_branch(
        settings, c.repository, c.repo, branch=c.branch, commit=head, token=api.token(), force=True
    )
    pull = api.open_pull(
        c.repository,
        # Once per fix row, not per dedupe key: after a human closed our PR for these violations
        # (and lifted the suppression), the next fix row is a new PR, not the closed one again.
        key=f"pull:{c.repository}:{c.key}:{fix_id}",
        branch=c.branch,
        base=c.base_ref,
        title=c.text.title,
        body=c.text.body,
    )
    with session_scope(settings.resolved_database_url) as session:
        row = session.get_one(Fix, fix_id)
        row.number, row.url, row.pr_number = int(pull.remote_id), pull.url, int(pull.remote_id)
        row.head_sha, row.diff = head, diff(c.repo, c.base_sha, head)
        row.bot_head_sha = head  # what a merge is compared with: did a human edit it?
        return Opened(fix_id, f"PR #{row.number} on {c.branch}")


@dataclass(frozen=True)
class _OpenPull:
    """Our open PR for the same contract, as read before extending it."""

    fix_id: int
    branch: str
    number: int
    url: str | None
    head_sha: str
    base_sha: str


@dataclass(frozen=True)
class _Pushed:
    """What an extension pushed: the new head, the violations it fixes, the files it wrote,
    and the base commit it now builds on (the failing commit when it is newer than the fix's)."""

    head: str
    added: list[str]
    written: list[str]
    base_sha: str
    codemods: tuple[str, ...] = ()


def extend(settings: Settings, api: GitHubApi, c: Candidate, fix_id: int) -> PublishOutcome:
    """Push a commit fixing the new violations to our open PR for the same contract
    (``BranchGuarded`` when its last commits are bots' with another bot among them:
    ``bot.forges.branch_guard``)."""
    with session_scope(settings.resolved_database_url) as session:
        row = session.get_one(Fix, fix_id)
        assert row.number is not None
        pr = _OpenPull(fix_id, row.branch, row.number, row.url, row.head_sha, row.base_sha)
    ref = f"refs/heads/{pr.branch}"
    refusal = push_refusal(settings, c.repo, ref, branch=pr.branch, own_branch=True)
    if refusal is not None:
        raise BranchGuarded(refusal)  # the run ends loop_guarded (bot.pipeline.memory.loop_guard)
    worktree = settings.worktrees_dir.resolve() / f"extend-{fix_id}-{uuid4().hex[:8]}"
    try:
        fresh_worktree(c.repo, worktree, ref)
        pushed = _push_new_fixes(settings, api, c, pr, worktree)
    finally:
        remove_worktree(c.repo, worktree)
    if isinstance(pushed, Linked):
        return pushed
    _record_extension(settings, api, c, pr, pushed)
    return Extended(
        fix_id, pr.url, f"pushed {pushed.head[:12]} (was {pr.head_sha[:12]}) to PR #{pr.number}"
    )


def _merge_base_into(worktree: Path, commit: str) -> str | None:
    """Bring the failing commit (a trusted base commit) into our branch: the merge commit made
    (None: already contained, nothing happened); ``GitError`` on a conflict, merge aborted."""
    before = resolve_commit(worktree, "HEAD")
    try:
        git(worktree, "merge", "--no-edit", "-m", f"Merge {commit[:12]} into the fix", commit)
    except GitError:
        git(worktree, "merge", "--abort", check=False)
        raise
    after = resolve_commit(worktree, "HEAD")
    return after if after != before else None


def _push_new_fixes(
    settings: Settings, api: GitHubApi, c: Candidate, pr: _OpenPull, worktree: Path
) -> _Pushed | Linked:
    """In a worktree of the PR's branch: merge the failing commit, fix, commit and push (only
    the bot's own commits on top of the trusted base and the branch: ``check_push``)."""
    branch_tip = resolve_commit(worktree, "HEAD")
    try:
        merged = _merge_base_into(worktree, c.base_sha)
    except GitError:
        why = (
            f"new violations at {c.base_sha[:12]}, but it does not merge cleanly into "
            f"PR #{pr.number}; fix them by hand or close the PR"
        )
        return Linked(pr.fix_id, pr.url, why)
    # Only the candidate's violations: never one a suppression holds back (it is not among them).
    wanted = set(c.violation_keys)
    result = fix(
        worktree, [c.contract], imports=True, held=lambda v: violation_key(v) not in wanted
    )
    written = write_changes(worktree, result) if result.changes else []
    if not written:
        return Linked(pr.fix_id, pr.url, f"PR #{pr.number} already fixes every violation found")
    added = fixed_violations(result)
    head = commit_all(
        worktree,
        f"Fix {len(added)} more {c.contract.base} violation(s)\n\n"
        + "\n".join(f"- {line}" for line in added),
    )
    check_push(
        c.repo,
        head,
        trusted=[c.trusted_tip or "", branch_tip],
        made={head} | ({merged} if merged else set()),
        where=f"{c.repository} {pr.branch}",
    )
    push_branch(
        settings,
        c.repository,
        c.repo,
        branch=pr.branch,
        commit=head,
        token=api.token(),
        force=False,
    )
    newer_base = c.base_sha if reaches(c.repo, c.base_sha, pr.base_sha) else pr.base_sha
    return _Pushed(head, added, written, newer_base, applied_codemods(result))


def _record_extension(
    settings: Settings, api: GitHubApi, c: Candidate, pr: _OpenPull, pushed: _Pushed
) -> None:
    """The fix row grows by the pushed commit, and the PR says so."""
    with session_scope(settings.resolved_database_url) as session:
        row = session.get_one(Fix, pr.fix_id)
        row.head_sha = row.bot_head_sha = pushed.head
        row.codemods = sorted({*row.codemods, *pushed.codemods})
        row.violations = [*row.violations, *pushed.added]
        row.violation_keys = sorted({*row.violation_keys, *c.violation_keys})
        row.files = sorted({*row.files, *pushed.written})
        # Against the base the branch now builds on: the diff shows only the bot's commits.
        row.base_sha = pushed.base_sha
        row.diff = diff(c.repo, pushed.base_sha, pushed.head)
        if open_fix_with_key(session, dedupe_key=c.key) is None:
            row.dedupe_key = c.key
        api.comment(
            session,
            row,
            "New violations of the same contract appeared; pushed "
            f"`{pushed.head[:12]}` fixing them:\n" + "\n".join(f"- {a}" for a in pushed.added),
            key=f"extend:{pr.fix_id}:{pushed.head}",
        )
