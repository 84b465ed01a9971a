"""What every forge offers the pipeline: publish a fix, then talk on its PR and set statuses.

A forge does forge work only: branches, pushes, PRs and the ``fixes`` rows that record them. The
run's state and what happens next (a verification) are the pipeline's: ``publish`` says what it
did as a :data:`PublishOutcome` and the repair stage records it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from sqlalchemy.orm import Session

from bot.db.models import Fix
from bot.forges.pr_text import PullRequestText
from fixers.contracts.model import Contract

StatusState = Literal["pending", "success", "failure", "error"]


@dataclass(frozen=True)
class Candidate:
    """A fix made in a worktree (changes written, not committed), ready to publish."""

    run_id: int
    own_fix: int | None  # the fix an earlier attempt of this run reserved (a resumed run)
    repository: str  # ``owner/name`` on GitHub; the repository's path for the local forge
    repo: Path  # the git repository the worktree belongs to: the target, or its mirror
    worktree: Path
    base_sha: str
    base_ref: str | None
    key: str  # the dedupe key of these violations: one open fix per key
    contract_key: str  # the dedupe key of the contract alone (no violations)
    contract: Contract
    signature: str
    branch: str
    violation_keys: list[str]
    violations: list[str]
    files: list[str]
    text: PullRequestText
    # The trusted branch's tip reaching ``base_sha`` (bot.forges.provenance): every push is
    # checked against it. None: no trusted base, so nothing but the bot's own commits may go.
    trusted_tip: str | None
    codemods: tuple[str, ...] = ()  # the codemods that made the changes (the quality figures)


@dataclass(frozen=True)
class Opened:
    """A new fix, recorded as ``fix_id`` (with the run linked to it) and published."""

    fix_id: int
    reason: str


@dataclass(frozen=True)
class Extended:
    """The new violations were pushed to our open fix ``fix_id`` for the same contract."""

    fix_id: int
    url: str | None
    reason: str


@dataclass(frozen=True)
class Linked:
    """Nothing published: fix ``fix_id`` of ours, or the PR at ``url``, already covers it."""

    fix_id: int | None
    url: str | None
    reason: str


PublishOutcome = Opened | Extended | Linked


class Forge(Protocol):
    """A forge (local git, GitHub): where fixes are published and talked about."""

    name: str

    def publish(self, candidate: Candidate) -> PublishOutcome:
        """Open the candidate as a fix, or link it to one that already covers it.

        Opening records the ``fixes`` row and links the run to it (``repair_runs.fix_id``) in
        the same transaction, so that a killed attempt resumes its own fix; every state
        transition of the run is left to the caller.
        """

    def comment(self, session: Session, fix: Fix, body: str, *, key: str | None = None) -> None:
        """Post a comment on the fix's PR (at most once per ``key`` where the forge can tell)."""

    def set_status(
        self,
        session: Session,
        fix: Fix,
        *,
        state: StatusState,
        context: str,
        description: str,
        target_url: str | None = None,
    ) -> None:
        """Set a commit status on the fix's head commit."""
