"""What the engine learned for one contract break, and what it decided for each subclass: the
data ``repairbot fix --explain``/``--json``, the fix PR and the service's runs read."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from fixers.learned.breaks import ContractBreak
from fixers.learned.installed import InstalledMethod
from fixers.learned.rule import CommitRef, MigrationRule
from fixers.sweep.index import Hierarchy
from fixers.sweep.violation_types import Violation

Outcome = Literal["fixed", "reported", "skipped"]


@dataclass(frozen=True)
class Decision:
    """What the engine decided for one subclass, and why (``repairbot fix --explain``)."""

    class_name: str
    path: str
    outcome: Outcome
    reason: str


@dataclass
class Learning:
    """Everything learned for one break: where, from which commit, the rule, the decisions."""

    brk: ContractBreak
    base: str = ""
    base_path: str | None = None  # None: the base is outside the repository
    base_dotted: str = ""  # the base as the failing class's imports name it
    failing: str = ""  # the qualified name of the class the break was read for
    installed: InstalledMethod | None = None  # an outside base's method, read from its library
    commit: CommitRef | None = None
    rule: MigrationRule | None = None
    problem: str = ""
    evidence: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    hierarchy: Hierarchy | None = None

    def summary(self) -> str:
        """One line: the rule in words, or why there is none."""
        where = self.base_path or "outside the repository"
        head = f"{self.brk.describe()} against {self.base or '?'} ({where})"
        return f"{head}: {self.rule.words()}" if self.rule else f"{head}: {self.problem}"

    def explain(self) -> list[str]:
        """The summary, the evidence, then one line per subclass decision."""
        lines = [self.summary(), *(f"  evidence: {line}" for line in self.evidence)]
        lines += [f"  note: {note}" for note in self.notes]
        lines += [f"  {d.outcome}: {d.class_name} ({d.path}): {d.reason}" for d in self.decisions]
        return lines

    def settle(
        self, failed: Mapping[tuple[str, str], str], made: Collection[tuple[str, str]]
    ) -> None:
        """Turn each "fixed" decision whose edit did not hold into "reported", with why.

        ``failed`` maps (path, class) to why its edit failed (``(path, "")``: the whole file's);
        ``made`` holds the (path, class) pairs a change edited. A decision says what the change
        does, not what the rule promised."""

        def why(d: Decision) -> str:
            key = (d.path, d.class_name)
            if key in failed:
                return failed[key]
            return "" if key in made else failed.get((d.path, ""), "no change was made")

        self.decisions = [
            replace(d, outcome="reported", reason=f"the edit could not be made: {reason}")
            if d.outcome == "fixed" and (reason := why(d))
            else d
            for d in self.decisions
        ]

    @property
    def unrepaired(self) -> bool:
        """Whether a class this break breaks is left for a human (reported, or no rule)."""
        return any(d.outcome == "reported" for d in self.decisions) or (
            self.rule is None and not any(d.outcome == "fixed" for d in self.decisions)
        )

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (``repairbot fix --json``)."""
        return {
            "break": self.brk.describe(),
            "base": self.base,
            "base_path": self.base_path,
            "commit": {"sha": self.commit.sha, "subject": self.commit.subject}
            if self.commit
            else None,
            "rule": self.rule.words() if self.rule else None,
            "problem": self.problem or None,
            "evidence": list(self.evidence),
            "decisions": [d.__dict__ for d in self.decisions],
        }
