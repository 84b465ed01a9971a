"""Is the failing commit's violation still on the base branch? If not, say which commit fixed it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from uuid import uuid4

from bot.db.rows import violation_key
from bot.git import GitError, fresh_worktree, git, remove_worktree, resolve_commit
from fixers.contracts.model import Contract
from fixers.sweep.run import sweep
from fixers.sweep.violation_types import Violation


def base_head(repo: Path, base_ref: str | None) -> str | None:
    """The commit ``base_ref`` points at (a local or ``origin/`` branch), if it resolves."""
    if not base_ref:
        return None
    for ref in (base_ref, f"origin/{base_ref}"):
        try:
            return resolve_commit(repo, ref)
        except GitError:
            continue
    return None


def violations_at(
    repo: Path, commit: str, contract: Contract, worktrees_dir: Path
) -> list[Violation]:
    """``contract``'s violations in ``repo`` at ``commit``, swept in a worktree made for it and
    removed afterwards."""
    worktree = worktrees_dir / f"sweep-{uuid4().hex[:8]}"
    try:
        fresh_worktree(repo, worktree, commit)
        return sweep(worktree, [contract], infer=False).violations
    finally:
        remove_worktree(repo, worktree)


def fixed_on_base(
    *,
    repo: Path,
    failing_sha: str,
    base_ref: str | None,
    contract: Contract,
    violation_keys: Iterable[str],
    files: Iterable[str],
    worktrees_dir: Path,
) -> str | None:
    """A reason naming the fixing commit when the base branch no longer has these violations."""
    wanted = set(violation_keys)
    head = base_head(repo, base_ref)
    if head is None or head == failing_sha or not wanted:
        return None
    still = {violation_key(v) for v in violations_at(repo, head, contract, worktrees_dir)}
    if wanted & still:
        return None
    fixer = git(
        repo, "log", "-1", "--format=%h %s", f"{failing_sha}..{head}", "--", *sorted(set(files))
    )
    by = fixer.strip() or f"a commit between {failing_sha[:12]} and {head[:12]}"
    return f"already fixed on {base_ref} at {head[:12]} (last change to these files: {by})"
