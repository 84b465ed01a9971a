"""The local forge: targets are git repositories on disk; a PR is a branch plus a database row."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from bot.forge.git import git, resolve_commit


class RepositoryRefused(ValueError):
    """A repository the local forge will not touch; the message says why."""


@dataclass(frozen=True)
class LocalRepository:
    """A git repository on this machine, resolved and checked."""

    path: Path

    def commit(self, ref: str) -> str:
        """Full SHA of a ref or SHA in this repository."""
        return resolve_commit(self.path, ref)


def resolve_local_repository(spec: str | None, allowed_roots: list[Path]) -> LocalRepository:
    """Turn a report's ``repository`` (a path or ``file://`` URL) into a checked local repository.

    With ``allowed_roots`` set, the repository must lie under one of them.
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
    if allowed_roots and not any(path.is_relative_to(root.resolve()) for root in allowed_roots):
        raise RepositoryRefused(f"repository {path} is outside the allowed roots")
    if not (path / ".git").exists():
        raise RepositoryRefused(f"repository {path} is not a git repository")
    git(path, "rev-parse", "--git-dir")
    return LocalRepository(path)
