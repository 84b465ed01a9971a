"""What the bot reads about pull requests and who may write: plain values, no API calls."""

from __future__ import annotations

from dataclasses import dataclass

# Permission levels that may push to the repository (the collaborator-permission endpoint).
WRITERS = frozenset({"admin", "write", "maintain"})


@dataclass(frozen=True)
class PullInfo:
    """An open PR as the dedupe check needs it."""

    number: int
    url: str
    head_ref: str
    head_sha: str
    base_ref: str
    author: str
    head_repository: str | None = None  # where the head branch lives (None: deleted)


@dataclass(frozen=True)
class PullState:
    """One PR as it is now: what the pre-merge contract check reads before and after."""

    number: int
    url: str
    state: str  # "open" or "closed"
    merged: bool
    head_ref: str
    head_sha: str
    base_ref: str
    author: str
    author_type: str
    # Where the head branch lives (None: its repository was deleted), and whether the base
    # repository's maintainers (the bot among them) may push to it when that is a fork.
    head_repository: str | None = None
    maintainer_can_modify: bool = False
    base_repository: str = ""

    @property
    def from_fork(self) -> bool:
        """Whether the head branch lives in another repository than the base."""
        return (self.head_repository or "").lower() != self.base_repository.lower()
