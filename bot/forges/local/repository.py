"""The local forge: targets are git repositories on disk; a PR is a branch plus a database row."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from bot.git import GitError, git, resolve_commit


class RepositoryRefused(ValueError):
    """A repository the local forge will not touch; the message says why."""


@dataclass(frozen=True)
class LocalRepository:
    """A git repository on this machine, resolved and checked."""

    path: Path

    def commit(self, ref: str) -> str:
        """Full SHA of a ref or SHA in this repository."""
        return resolve_commit(self.path, ref)


def resolve_local_repository(
    spec: str | None, allowed_roots: list[Path], private_dirs: list[Path] | None = None
) -> LocalRepository:
    """Turn a report's ``repository`` (a path or ``file://`` URL) into a checked local repository.

    The repository must lie under one of ``allowed_roots`` (none: every repository is refused)
    and not under ``private_dirs`` (our own worktrees and mirrors). Symlinks are resolved before
    the check, and nothing in the repository is touched before it passes.
    """
    if not spec:
        raise RepositoryRefused("the report names no repository")
    raw = unquote(urlparse(spec).path) if spec.startswith("file://") else spec
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise RepositoryRefused(
            f"repository {spec!r} is neither an absolute path nor a file:// URL"
        )
    path = path.resolve()
    if not any(path.is_relative_to(root.resolve()) for root in allowed_roots):
        raise RepositoryRefused(
            f"refused: repository {path} is outside the allowed roots (REPAIRBOT_REPOSITORY_ROOTS "
            "and the data dir)"
        )
    if any(path.is_relative_to(own.resolve()) for own in private_dirs or []):
        raise RepositoryRefused(f"refused: {path} is one of repairbot's own checkouts")
    if not (path / ".git").exists():
        raise RepositoryRefused(f"repository {path} is not a git repository")
    git(path, "rev-parse", "--git-dir")
    return LocalRepository(path)


def base_ref_problem(repo: Path, base_ref: str | None) -> str | None:
    """Why a report's ``base_ref`` cannot be the PR's base here (None: it names a branch or commit).

    An unchecked ref would make a dedupe key of its own, so a bogus one opened another PR for
    the same violations.
    """
    if base_ref is None:
        return None
    for ref in (base_ref, f"origin/{base_ref}"):
        try:
            resolve_commit(repo, ref)
            return None
        except GitError:
            continue
    return f"refused: base_ref {base_ref!r} does not exist in {repo}"
