"""What a sweep and a fix produce: reports, per-file changes with evidence, and explicit skips."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from fixers.contracts.model import Contract
from fixers.sweep.unified_diff import split_lines, unified_diff
from fixers.sweep.violation_types import Note, Violation

if TYPE_CHECKING:
    from fixers.learned.learning import Learning

ImportStatus = Literal["ok", "failed", "unverified", "not-run"]


@dataclass(frozen=True)
class Skip:
    """Something the bot left alone, and why (a file it could not read, a class it cannot fix)."""

    path: str
    reason: str
    class_qualname: str | None = None

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {"path": self.path, "class": self.class_qualname, "reason": self.reason}


@dataclass(frozen=True)
class Evidence:
    """Why a changed file is safe to propose (it goes into the PR body)."""

    parses: bool
    idempotent: bool
    scoped: bool
    scope_detail: str
    import_status: ImportStatus = "not-run"
    import_detail: str = ""

    @property
    def ok(self) -> bool:
        """Every check passed (an import that could not be tried does not count against it)."""
        return self.parses and self.idempotent and self.scoped and self.import_status != "failed"

    def lines(self) -> list[str]:
        """Human-readable checklist."""
        mark = {True: "yes", False: "NO"}
        return [
            f"parses: {mark[self.parses]}",
            f"second run changes nothing: {mark[self.idempotent]}",
            f"diff limited to targeted classes and imports: {mark[self.scoped]}"
            + (f" ({self.scope_detail})" if self.scope_detail else ""),
            f"imports in the sandbox: {self.import_status}"
            + (f" ({self.import_detail})" if self.import_detail else ""),
        ]

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "parses": self.parses,
            "idempotent": self.idempotent,
            "scoped": self.scoped,
            "scope_detail": self.scope_detail,
            "import_status": self.import_status,
            "import_detail": self.import_detail,
        }


@dataclass
class FileChange:
    """One rewritten file: old and new text, what did it, and the evidence."""

    path: str
    module: str
    before: str
    after: str
    codemods: list[str]
    classes: list[str]
    evidence: Evidence | None = None

    def diff(self) -> str:
        """Unified diff with ``a/`` and ``b/`` prefixes, as ``git apply`` takes it."""
        return unified_diff(self.path, split_lines(self.before), split_lines(self.after))


@dataclass
class SweepResult:
    """Everything one sweep found in one tree."""

    root: str
    contracts: list[Contract]
    listing: str
    files: int
    files_read: int
    files_parsed: int
    violations: list[Violation]
    notes: list[Note] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    config_errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """``N violation(s) in M class(es)``: what a maintainer has to act on."""
        classes = len({(v.path, v.class_qualname) for v in self.violations})
        return f"{len(self.violations)} violation(s) in {classes} class(es)"

    def to_json(self, *, explain: bool = False) -> dict[str, object]:
        """A JSON-ready dict for ``repairbot sweep --json`` (``notes`` with ``--explain``)."""
        notes = {"notes": [n.to_json() for n in self.notes]} if explain else {}
        return notes | {
            "root": self.root,
            "contracts": [
                c.__dict__ | {"metadata_params": list(c.metadata_params)} for c in self.contracts
            ],
            "listing": self.listing,
            "files": self.files,
            "files_read": self.files_read,
            "files_parsed": self.files_parsed,
            "violations": [v.to_json() for v in self.violations],
            "summary": self.summary(),
            "skips": [s.to_json() for s in self.skips],
            "config_errors": self.config_errors,
        }


@dataclass
class FixResult:
    """A sweep plus the changes made for it and everything left alone."""

    report: SweepResult
    changes: list[FileChange]
    skips: list[Skip]
    # Wall-clock seconds of each part of the fix ("sweep", "fix", "import evidence").
    seconds: dict[str, float] = field(default_factory=dict)
    # Violations found and deliberately left out of the fix and of ``report`` (``fix(held=)``:
    # a human's decision holds them back).
    held: list[Violation] = field(default_factory=list)
    # What was learned from the history for each contract break a CI log named (fixers.learned).
    learned: list[Learning] = field(default_factory=list)

    def diff(self) -> str:
        """All changes as one unified diff."""
        return "".join(change.diff() for change in self.changes)

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "report": self.report.to_json(),
            "changes": [
                {
                    "path": c.path,
                    "codemods": c.codemods,
                    "classes": c.classes,
                    "evidence": c.evidence.to_json() if c.evidence else None,
                }
                for c in self.changes
            ],
            "skips": [s.to_json() for s in self.skips],
            "learned": [learning.to_json() for learning in self.learned],
        }
