"""Contract breaks read from classified failures: which class broke, on which method, and how."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from fixers.classify.failures import Finding
from fixers.contracts.model import Contract

BreakKind = Literal["missing-abstract", "unexpected-keyword", "positional-count"]
LEARNING_FIXER = "learn-migration"
LEARNED_SOURCE = "learned"
_KINDS: dict[str, BreakKind] = {
    "abstract-class-instantiation": "missing-abstract",
    "guard-must-implement": "missing-abstract",
    "override-unexpected-keyword": "unexpected-keyword",
    "override-positional-arguments": "positional-count",
}


@dataclass(frozen=True)
class ContractBreak:
    """A class that no longer fits its base: ``method`` is what the base now wants of it (a
    missing abstract method, or the overridden method the base calls), ``keyword`` the argument
    the base now passes (unexpected-keyword only), ``path`` the file defining the class when
    it is known (a log names only the class: two classes of that name are told apart by which
    one has the break)."""

    kind: BreakKind
    class_name: str
    method: str
    keyword: str | None
    message: str
    path: str | None = None

    def describe(self) -> str:
        """One line for reports."""
        extra = f" (keyword {self.keyword})" if self.keyword else ""
        return f"{self.class_name}.{self.method}: {self.kind}{extra}"

    @property
    def root_cause(self) -> str:
        """What breaks of one root cause share: the shape, the method and the keyword (the
        classes differ: every subclass the contract commit missed fails the same way)."""
        return f"learned:{self.kind}:{self.method}:{self.keyword or ''}"

    def as_contract(self) -> Contract:
        """The contract a repair run of this break's root cause carries (``source="learned"``):
        a class the log named and the method; the base and the rule are learned when it runs."""
        return Contract(
            name=self.root_cause,
            base=self.class_name,
            forbidden=self.method,
            hook=self.method,
            restore_hook=None,
            metadata_params=(),
            source=LEARNED_SOURCE,
        )


def breaks_of(findings: Iterable[Finding]) -> list[ContractBreak]:
    """One break per (class, method) the findings name, in the findings' order."""
    out: dict[tuple[str, str], ContractBreak] = {}
    for finding in findings:
        kind = _KINDS.get(finding.signature)
        cls = (finding.captures.get("cls") or "").rsplit(".", 1)[-1]
        if kind is None or not cls:
            continue
        methods = finding.missing_methods or (finding.captures.get("method", ""),)
        for method in (m for m in methods if m):
            keyword = finding.captures.get("keyword") if kind == "unexpected-keyword" else None
            out.setdefault(
                (cls, method), ContractBreak(kind, cls, method, keyword, finding.message)
            )
    return list(out.values())


def findings_of_break(contract: Contract, findings: Iterable[Finding]) -> list[Finding]:
    """The findings of the root cause ``contract`` (``ContractBreak.as_contract``) stands for."""
    return [
        finding
        for finding in findings
        if any(b.root_cause == contract.name for b in breaks_of([finding]))
    ]
