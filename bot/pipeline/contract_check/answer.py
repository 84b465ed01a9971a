"""What a contract check answers: the ``repairbot/contracts`` status, and its row.

A check ends in one of four states: ``success`` / ``failure`` / ``error`` are the commit status
set on the head that was checked; ``skipped`` sets none (the PR closed, its head branch was
deleted, it is one of ours). Each answer is recorded once per (repository, PR, head, base).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.db.records.contract_checks import ContractCheck
from bot.db.rows import violation_lines
from bot.forges.github.write_ops import STATUS_DESCRIPTION_MAX
from bot.pipeline.contract_check.sweep import (
    Conflict,
    Outcome,
    OverWriteBudget,
    Swept,
    TooManyFiles,
    Unmergeable,
)
from bot.pipeline.contract_check.tree import WriteBudget
from fixers.sweep.violation_types import Violation

CONTEXT = "repairbot/contracts"
State = Literal["success", "failure", "error", "skipped"]
MAX_LISTED_PATHS = 3
CONFIG_NOTE = "checked with the base's .repairbot.toml (this PR's applies after merge)"


@dataclass(frozen=True)
class Answer:
    """A check's answer: the status (none when skipped) and what it found."""

    state: State
    description: str
    introduced: Sequence[Violation] = field(default_factory=tuple)
    target_url: str | None = None

    @property
    def posts_status(self) -> bool:
        """Whether this answer sets a commit status."""
        return self.state != "skipped"


def _clip(text: str) -> str:
    if len(text) <= STATUS_DESCRIPTION_MAX:
        return text
    return text[: STATUS_DESCRIPTION_MAX - 1].rstrip(", ") + "…"


def _short(violation: Violation) -> str:
    return f"{violation.class_qualname.rsplit('.', 1)[-1]} ({violation.kind})"


def failure_description(introduced: Sequence[Violation]) -> str:
    """``N contract violation(s) introduced: Class (kind), …`` within GitHub's 140 characters.

    >>> from fixers.sweep.violation_types import Violation
    >>> v = Violation("forbidden-override", "spec-worker", "a.py", 3, "a.Bad", "", "rename")
    >>> failure_description([v])
    '1 contract violation introduced: Bad (forbidden-override)'
    """
    count = len(introduced)
    head = f"{count} contract violation{'' if count == 1 else 's'} introduced: "
    return _clip(head + ", ".join(_short(v) for v in introduced))


def _paths(paths: Sequence[str]) -> str:
    listed = ", ".join(paths[:MAX_LISTED_PATHS])
    more = len(paths) - MAX_LISTED_PATHS
    return listed if more <= 0 else f"{listed} and {more} more"


def answer_for(outcome: Outcome, *, base_ref: str, pull_url: str) -> Answer:
    """The status a check's outcome sets."""
    if isinstance(outcome, Conflict):
        return Answer("error", _clip(f"merge conflicts with {base_ref} in {_paths(outcome.paths)}"))
    if isinstance(outcome, Unmergeable):
        return Answer("error", _clip(f"cannot merge onto {base_ref}: {outcome.reason}"))
    if isinstance(outcome, TooManyFiles):
        return Answer(
            "error",
            _clip(f"too many files ({outcome.count} > {outcome.limit}) for the contract check"),
        )
    if isinstance(outcome, OverWriteBudget):
        return Answer("error", _clip(f"not checked: {outcome.reason}"))
    assert isinstance(outcome, Swept)
    if not outcome.introduced:
        return Answer("success", _noted("no contract violations introduced", outcome))
    description = _noted(failure_description(outcome.introduced), outcome)
    return Answer("failure", description, outcome.introduced, pull_url)


def _noted(description: str, outcome: Swept) -> str:
    """The description, led by a note when the PR changes ``.repairbot.toml``: the check used
    the base's, and the PR's takes effect once merged."""
    if not outcome.config_changed:
        return description
    return _clip(f"{CONFIG_NOTE}; {description}")


def answered(
    session: Session, repository: str, number: int, head_sha: str, base_sha: str
) -> ContractCheck | None:
    """The recorded answer for this head on this base, if there is one."""
    return session.scalar(
        select(ContractCheck).where(
            ContractCheck.repository == repository,
            ContractCheck.number == number,
            ContractCheck.head_sha == head_sha,
            ContractCheck.base_sha == base_sha,
        )
    )


def record(
    session: Session,
    repository: str,
    number: int,
    *,
    head_sha: str,
    base_sha: str,
    answer: Answer,
    written: WriteBudget | None = None,
) -> bool:
    """Remember ``answer`` (and what the check ``written`` under the data dir); False when a
    concurrent check of the same commits recorded first."""
    row = ContractCheck(
        repository=repository,
        number=number,
        head_sha=head_sha,
        base_sha=base_sha,
        state=answer.state,
        description=answer.description,
        introduced=violation_lines(answer.introduced),
        written_files=written.files if written else 0,
        written_bytes=written.bytes if written else 0,
    )
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:
        return False
    return True
