"""What a sweep reports: violations of a contract, and notes on changes that are not violations."""

from __future__ import annotations

from dataclasses import dataclass

from fixers.learned.rule import MigrationRule
from fixers.state.flow import Observation

# A violation's kind and its fix are the names codemods declare (``CODEMOD.kinds``, ``.fix``):
# the codemod registry is the one list of them (fixers/codemods/registry.py), so a new kind is
# one module (docs/extending.md). The built-in kinds: forbidden-override, missing-hook,
# transient-state, deferred-fixup, learned-migration; fixes: rename, stub, snapshot,
# pending-flag, learned. tests/fixers/codemods/test_registry.py checks every violation the
# sweep reports against the registry.
Kind = str
Fix = str
Save = tuple[str, str, str, str]  # (holder, param, attr, "value" | "tensor")


@dataclass(frozen=True)
class Violation:
    """One place where a class breaks a contract, and how (or whether) the bot fixes it."""

    kind: Kind
    contract: str
    path: str
    line: int
    class_qualname: str
    detail: str
    fix: Fix | None
    method: str | None = None
    saves: tuple[Save, ...] = ()
    fixup: tuple[str, str] = ("", "")  # (adjusting statement, compensating statement) as source
    flag: str = ""
    rule: MigrationRule | None = None  # a learned-migration's rule (fixers.learned)
    stub: str = ""  # a learned-migration's method stub for a test double, as source
    stub_imports: tuple[str, ...] = ()  # what the stub's annotations import (``module:Name``)

    def location(self) -> str:
        """``path:line``."""
        return f"{self.path}:{self.line}"

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict for ``repairbot sweep --json``."""
        return {
            "kind": self.kind,
            "contract": self.contract,
            "path": self.path,
            "line": self.line,
            "class": self.class_qualname,
            "detail": self.detail,
            "fix": self.fix,
            "method": self.method,
        }


@dataclass(frozen=True)
class Note:
    """A metadata change the state-flow model does not count, with the reason."""

    path: str
    line: int
    class_qualname: str
    method: str
    field: str
    category: str
    reason: str

    @classmethod
    def of(cls, qualname: str, observation: Observation) -> Note:
        """The note for one observation of ``qualname``'s call."""
        event = observation.event
        return cls(
            event.rel,
            event.line,
            qualname,
            event.method,
            f"{event.param}.{event.attr}",
            observation.category,
            observation.reason(),
        )

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (``sweep --json --explain``)."""
        return {
            "path": self.path,
            "line": self.line,
            "class": self.class_qualname,
            "method": self.method,
            "field": self.field,
            "category": self.category,
            "reason": self.reason,
        }


StateFindings = tuple[list[Violation], list[Observation]]
