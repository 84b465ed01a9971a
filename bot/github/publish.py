"""Publishing a fix on GitHub without ever duplicating one.

In order: an open fix of ours with the same violations (our database) → link the run to it; an
open fix of ours for the same contract → push a commit with the new fixes to its branch; an open
PR on GitHub that already fixes every one of our violations (it touches our files and, at its
head, the sweep no longer finds them) → link the run to it; otherwise reserve the fix row (the
unique index on open dedupe keys makes concurrent runs agree), push the branch and open the PR.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from uuid import uuid4

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from bot.config import Settings
from bot.db.crud import move_run, open_fix_with_key
from bot.db.models import Fix, FixState, RepairRun, RunState
from bot.db.session import session_scope
from bot.forge.git import (
    GitError,
    commit_all,
    diff,
    fresh_worktree,
    git,
    remove_worktree,
    resolve_commit,
)
from bot.forge.github import GitHubForge, PullInfo
from bot.forge.pr_text import PullRequestText, fixed_violations
from bot.github.mirror import push_branch, sync_mirror
from bot.runner.requests import request_verification
from fixers.contracts import Contract
from fixers.sweep import fix, sweep, write_changes


@dataclass(frozen=True)
class Candidate:
    """A fix made in a worktree (changes written, not committed), ready to publish."""

    run_id: int
    repository: str
    mirror: Path
    worktree: Path
    base_sha: str
    base_ref: str
    key: str
    contract_key: str
    contract: Contract
    signature: str
    branch: str
    violation_keys: list[str]
    violations: list[str]
    files: list[str]
    text: PullRequestText


def violation_key(kind: str, class_qualname: str, path: str) -> str:
    """A violation's identity across commits (line numbers move, these do not)."""
    return f"{kind}:{class_qualname}:{path}"


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
    present = {violation_key(v.kind, v.class_qualname, v.path) for v in found.violations}
    return set(keys) & present


def _link(
    settings: Settings, run_id: int, *, fix_id: int | None, url: str | None, why: str
) -> None:
    with session_scope(settings.resolved_database_url) as session:
        run = session.get_one(RepairRun, run_id)
        run.fix_id, run.linked_url = fix_id, url
        move_run(session, run=run, to=RunState.DUPLICATE, reason=why)


def covering_pull(settings: Settings, forge: GitHubForge, c: Candidate) -> PullInfo | None:
    """An open PR (not ours) that already fixes every violation this candidate fixes."""
    token = forge.token()
    for pull in forge.open_pulls(c.repository, limit=settings.github_dedupe_scan_limit):
        if pull.head_ref == c.branch or pull.base_ref != c.base_ref:
            continue
        if not set(c.files) <= set(forge.pull_files(c.repository, pull.number)):
            continue
        ref = f"refs/pull/{pull.number}/head"
        try:
            resolve_commit(c.mirror, ref)
        except Exception:
            sync_mirror(settings, c.repository, token)
        if not remaining_violations(settings, c.mirror, ref, c.contract, c.violation_keys):
            return pull
    return None


def publish(settings: Settings, forge: GitHubForge, c: Candidate) -> None:
    """Link, extend or open: see the module docstring."""
    with session_scope(settings.resolved_database_url) as session:
        run = session.get_one(RepairRun, c.run_id)
        existing = open_fix_with_key(session, dedupe_key=c.key)
        resume = existing is not None and existing.id == run.fix_id
        if existing is not None and not resume:
            run.fix_id = existing.id
            run.linked_url = existing.url
            move_run(
                session,
                run=run,
                to=RunState.DUPLICATE,
                reason=f"fix #{existing.id} ({existing.url or 'being opened'}) covers it",
            )
            return
        same_contract = (
            None
            if resume
            else session.scalar(
                select(Fix.id).where(
                    Fix.forge == "github",
                    Fix.repository == c.repository,
                    Fix.contract_key == c.contract_key,
                    Fix.state == FixState.OPEN.value,
                    Fix.number.is_not(None),
                )
            )
        )
    if same_contract is not None:
        extend(settings, forge, c, same_contract)
        return
    if not resume:
        covering = covering_pull(settings, forge, c)
        if covering is not None:
            _link(
                settings,
                c.run_id,
                fix_id=None,
                url=covering.url,
                why=f"open PR #{covering.number} by {covering.author} already fixes it",
            )
            return
        fix_id = _reserve(settings, c)
        if fix_id is None:
            return
    _open(settings, forge, c)


def _reserve(settings: Settings, c: Candidate) -> int | None:
    """Insert our fix row before anything reaches GitHub; None when another run got there."""
    with session_scope(settings.resolved_database_url) as session:
        run = session.get_one(RepairRun, c.run_id)
        row = Fix(
            forge="github",
            repository=c.repository,
            dedupe_key=c.key,
            contract_key=c.contract_key,
            signature=c.signature,
            base_ref=c.base_ref,
            base_sha=c.base_sha,
            branch=c.branch,
            head_sha=c.base_sha,
            title=c.text.title,
            body=c.text.body,
            files=c.files,
            violations=c.violations,
            violation_keys=c.violation_keys,
            diff="",
        )
        try:
            with session.begin_nested():
                session.add(row)
        except IntegrityError:
            other = open_fix_with_key(session, dedupe_key=c.key)
            run.fix_id = other.id if other else None
            move_run(
                session,
                run=run,
                to=RunState.DUPLICATE,
                reason="another run is opening the same fix",
            )
            return None
        run.fix_id = row.id
        return row.id


def _open(settings: Settings, forge: GitHubForge, c: Candidate) -> None:
    with session_scope(settings.resolved_database_url) as session:
        fix_id = session.get_one(RepairRun, c.run_id).fix_id
    assert fix_id is not None
    head = commit_all(c.worktree, c.text.commit_message)
    push_branch(
        settings,
        c.repository,
        c.mirror,
        branch=c.branch,
        commit=head,
        token=forge.token(),
        force=True,
    )
    pull = forge.open_pull(
        c.repository,
        key=f"pull:{c.repository}:{c.key}",
        branch=c.branch,
        base=c.base_ref,
        title=c.text.title,
        body=c.text.body,
    )
    with session_scope(settings.resolved_database_url) as session:
        row = session.get_one(Fix, fix_id)
        row.number, row.url, row.pr_number = int(pull.remote_id), pull.url, int(pull.remote_id)
        row.head_sha, row.diff = head, diff(c.mirror, c.base_sha, head)
        move_run(
            session,
            run=session.get_one(RepairRun, c.run_id),
            to=RunState.PR_OPENED,
            reason=f"PR #{row.number} on {c.branch}",
        )
        # The bot authored this branch, so it is trusted: verify it at once.
        request_verification(
            session,
            fix=row,
            requested_by="repairbot (automatic)",
            default_queue=settings.verify_default_queue,
        )


def _merge_base_into(worktree: Path, commit: str) -> bool:
    """Bring the failing commit (newer base) into our branch; False on a conflict.

    Already contained: nothing happens ("Already up to date").
    """
    try:
        git(worktree, "merge", "--no-edit", "-m", f"Merge {commit[:12]} into the fix", commit)
    except GitError:
        git(worktree, "merge", "--abort", check=False)
        return False
    return True


def extend(settings: Settings, forge: GitHubForge, c: Candidate, fix_id: int) -> None:
    """Push a commit fixing the new violations to our open PR for the same contract."""
    with session_scope(settings.resolved_database_url) as session:
        row = session.get_one(Fix, fix_id)
        branch, number, url, old_head = row.branch, row.number, row.url, row.head_sha
    assert number is not None
    worktree = settings.worktrees_dir.resolve() / f"extend-{fix_id}-{uuid4().hex[:8]}"
    try:
        fresh_worktree(c.mirror, worktree, f"refs/heads/{branch}")
        if not _merge_base_into(worktree, c.base_sha):
            _link(
                settings,
                c.run_id,
                fix_id=fix_id,
                url=url,
                why=f"new violations at {c.base_sha[:12]}, but it does not merge cleanly into "
                f"PR #{number}; fix them by hand or close the PR",
            )
            return
        result = fix(worktree, [c.contract], imports=True)
        written = write_changes(worktree, result) if result.changes else []
        if not written:
            _link(
                settings,
                c.run_id,
                fix_id=fix_id,
                url=url,
                why=f"PR #{number} already fixes every violation found",
            )
            return
        added = fixed_violations(result)
        head = commit_all(
            worktree,
            f"Fix {len(added)} more {c.contract.base} violation(s)\n\n"
            + "\n".join(f"- {line}" for line in added),
        )
        push_branch(
            settings,
            c.repository,
            c.mirror,
            branch=branch,
            commit=head,
            token=forge.token(),
            force=False,
        )
    finally:
        remove_worktree(c.mirror, worktree)
    with session_scope(settings.resolved_database_url) as session:
        row = session.get_one(Fix, fix_id)
        row.head_sha = head
        row.violations = [*row.violations, *added]
        row.violation_keys = sorted({*row.violation_keys, *c.violation_keys})
        row.files = sorted({*row.files, *written})
        row.diff = diff(c.mirror, row.base_sha, head)
        if open_fix_with_key(session, dedupe_key=c.key) is None:
            row.dedupe_key = c.key
        run = session.get_one(RepairRun, c.run_id)
        run.fix_id, run.linked_url = fix_id, url
        move_run(
            session,
            run=run,
            to=RunState.PR_OPENED,
            reason=f"pushed {head[:12]} (was {old_head[:12]}) to PR #{number}",
        )
        forge.comment(
            session,
            row,
            "New violations of the same contract appeared; pushed "
            f"`{head[:12]}` fixing them:\n" + "\n".join(f"- {a}" for a in added),
            key=f"extend:{fix_id}:{head}",
        )
