"""Violations of a contract in a repository hierarchy (issue 4, section 3).

* ``forbidden-override``: a subclass defines the forbidden method (fix: rename).
* ``missing-hook``: a concrete leaf subclass has no hook anywhere in its repository MRO
  (fix: a stub for test doubles; a human for library classes).
* ``transient-state``: metadata saved into locals and put back only on the success path
  (fix: snapshot codemod).
* ``unrestored-state``: metadata changed and never put back (reported only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fixers.index import Hierarchy, Member, RepoIndex
from fixers.repo_files import is_test_path
from fixers.violations_state import find_class, scan_implementation

Kind = Literal["forbidden-override", "missing-hook", "transient-state", "unrestored-state"]
Fix = Literal["rename", "stub", "snapshot"]


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
    saves: tuple[tuple[str, str, str], ...] = ()

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


def is_test_double(member: Member, test_dirs: tuple[str, ...]) -> bool:
    """Test code or a private stub: gets a generated hook stub instead of a human's attention."""
    return is_test_path(member.rel, test_dirs) or member.facts.name.startswith("_")


def _defines(hierarchy: Hierarchy, qualname: str, method: str) -> bool:
    return any(method in m.facts.methods for m in hierarchy.ancestors(qualname))


def _structural(
    hierarchy: Hierarchy, member: Member, test_dirs: tuple[str, ...]
) -> list[Violation]:
    contract = hierarchy.contract
    cls = member.facts
    found: list[Violation] = []
    if contract.forbidden in cls.methods:
        if contract.hook in cls.methods:
            found.append(
                Violation(
                    "forbidden-override",
                    contract.name,
                    member.rel,
                    cls.lineno,
                    member.qualname,
                    f"{cls.qualname} defines both {contract.forbidden} and {contract.hook}: "
                    "needs a human to merge them",
                    None,
                    contract.forbidden,
                )
            )
        else:
            found.append(
                Violation(
                    "forbidden-override",
                    contract.name,
                    member.rel,
                    cls.lineno,
                    member.qualname,
                    f"{cls.qualname} overrides {contract.base}.{contract.forbidden}; "
                    f"rename it to {contract.hook}",
                    "rename",
                    contract.forbidden,
                )
            )
        return found
    is_leaf = not hierarchy.children(member.qualname)
    has_hook = _defines(hierarchy, member.qualname, contract.hook) or _defines(
        hierarchy, member.qualname, contract.forbidden
    )
    if is_leaf and not cls.abstract_methods and not has_hook:
        double = is_test_double(member, test_dirs)
        detail = (
            f"{cls.qualname} lacks {contract.hook}; add a stub to this test double"
            if double
            else f"{cls.qualname} lacks {contract.hook} and is library code: needs a human"
        )
        found.append(
            Violation(
                "missing-hook",
                contract.name,
                member.rel,
                cls.lineno,
                member.qualname,
                detail,
                "stub" if double else None,
            )
        )
    return found


def _state(index: RepoIndex, hierarchy: Hierarchy, member: Member) -> list[Violation]:
    contract = hierarchy.contract
    if contract.restore_hook is None or not contract.metadata_params:
        return []
    if _defines(hierarchy, member.qualname, contract.restore_hook):
        return []
    method = next(
        (m for m in (contract.hook, contract.forbidden) if m in member.facts.methods), None
    )
    tree = index.tree(member.rel) if method is not None else None
    cls = find_class(tree, member.facts.qualname) if tree is not None else None
    if method is None or cls is None:
        return []
    report = scan_implementation(cls, method, contract.metadata_params)
    found: list[Violation] = []
    for saved in report.saved:
        attrs = ", ".join(f"{p}.{a}" for _, p, a in saved.saves)
        found.append(
            Violation(
                "transient-state",
                contract.name,
                member.rel,
                saved.line,
                member.qualname,
                f"{member.facts.qualname}.{saved.method} restores {attrs} only on the success path",
                "snapshot",
                saved.method,
                saved.saves,
            )
        )
    for change in report.unrestored:
        found.append(
            Violation(
                "unrestored-state",
                contract.name,
                member.rel,
                change.line,
                member.qualname,
                f"{member.facts.qualname}.{change.method} changes {change.param}.{change.attr} "
                "and no path puts it back: needs a human",
                None,
                change.method,
            )
        )
    return found


def find_violations(
    index: RepoIndex, hierarchy: Hierarchy, test_dirs: tuple[str, ...]
) -> list[Violation]:
    """Every violation of ``hierarchy.contract`` among its members, in file/line order."""
    found: list[Violation] = []
    for member in hierarchy.members.values():
        found.extend(_structural(hierarchy, member, test_dirs))
        found.extend(_state(index, hierarchy, member))
    return sorted(found, key=lambda v: (v.path, v.line, v.kind))
