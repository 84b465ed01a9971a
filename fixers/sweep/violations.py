"""Violations of a contract in a repository hierarchy (issue 4, section 3).

* ``forbidden-override``: a subclass defines the forbidden method (fix: rename).
* ``missing-hook``: a concrete leaf subclass has no hook anywhere in its repository MRO
  (fix: a stub for test doubles; a human for library classes).
* ``transient-state``: a success-path save/restore pair of metadata state (fix: snapshot).
* ``deferred-fixup``: an in-place adjustment compensated later, only on the success path
  (fix: a pending flag checked by the restore hook, or a human when the hook cannot redo it).

The last two come from the state-flow model (``fixers.state.trace``, ``fixers.state.flow``);
every other metadata change is a ``Note`` shown by ``sweep --explain`` only.
"""

from __future__ import annotations

from fixers.codemods.registry import builtin_codemods
from fixers.repo.files import is_test_path
from fixers.state.flow import analyse
from fixers.state.trace import ClassSource, Tracer, find_class
from fixers.state.violations import state_violations
from fixers.sweep.index import Hierarchy, Member, RepoIndex
from fixers.sweep.violation_types import Note, StateFindings, Violation


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
                    cls.line_of(contract.forbidden),
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
                    cls.line_of(contract.forbidden),
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


def _state(index: RepoIndex, hierarchy: Hierarchy, member: Member) -> StateFindings:
    contract = hierarchy.contract
    if contract.restore_hook is None or not contract.metadata_params:
        return [], []
    if _defines(hierarchy, member.qualname, contract.restore_hook):
        return [], []
    method = next(
        (m for m in (contract.hook, contract.forbidden) if m in member.facts.methods), None
    )
    if method is None:
        return [], []
    mro = class_sources(index, hierarchy, member.qualname)
    if not mro:
        return [], []
    flow = analyse(Tracer(mro, contract.metadata_params).trace(method))
    entry = mro[0].method(method)
    assert entry is not None
    found = [*state_violations(contract, member, entry, flow.pairs, flow.fixups)]
    return found, list(flow.observations)


def class_sources(index: RepoIndex, hierarchy: Hierarchy, qualname: str) -> list[ClassSource]:
    """The class statements of ``qualname``'s repository MRO, then the base's if it is here."""
    sources: list[ClassSource] = []
    members = [(m.rel, m.facts.qualname) for m in hierarchy.ancestors(qualname)]
    bases = []
    for base in sorted(hierarchy.bases):
        if base in index.classes:
            rel, facts = index.classes[base]
            bases.append((rel, facts.qualname))
    for rel, cls_qualname in [*members, *bases]:
        tree = index.tree(rel)
        node = find_class(tree, cls_qualname) if tree is not None else None
        if node is not None:
            sources.append(ClassSource(cls_qualname, rel, node))
    return sources


def find_violations(
    index: RepoIndex, hierarchy: Hierarchy, test_dirs: tuple[str, ...]
) -> tuple[list[Violation], list[Note]]:
    """Every violation of ``hierarchy.contract`` among its members, in file/line order, and the
    state changes that are not violations (for ``sweep --explain``)."""
    found: list[Violation] = []
    notes: list[Note] = []
    finders = builtin_codemods().finders()  # kinds a codemod module finds itself
    for member in hierarchy.members.values():
        found.extend(_structural(hierarchy, member, test_dirs))
        state, observations = _state(index, hierarchy, member)
        found.extend(state)
        notes.extend(Note.of(member.facts.qualname, o) for o in observations)
        for finder in finders:
            found.extend(finder(index, hierarchy, member))
    notes = sorted(set(notes), key=lambda n: (n.path, n.line, n.class_qualname, n.field))
    return sorted(found, key=lambda v: (v.path, v.line, v.kind)), notes
