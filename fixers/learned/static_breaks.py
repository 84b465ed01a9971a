"""Contract breaks found without a failure: concrete classes that lack an abstract method of a
repository ancestor. What the pre-merge check and ``repairbot check`` start from (a PR that
adds a subclass against the old contract has no CI log yet).

Only the classes of the given files are looked at (what a change touched). A class that
declares abstract methods of its own is abstract on purpose and is left alone; so is one whose
missing method some ancestor defines concretely.
"""

from __future__ import annotations

from collections.abc import Iterable

from fixers.learned.breaks import ContractBreak
from fixers.learned.lookup import parents_of
from fixers.sweep.index import RepoIndex


def _ancestors(index: RepoIndex, qualname: str) -> list[str]:
    """The repository ancestors of ``qualname``, nearest first, each once."""
    seen: list[str] = []
    queue = [qualname]
    while queue:
        for parent in parents_of(index, queue.pop(0)):
            if parent in index.classes and parent not in seen and parent != qualname:
                seen.append(parent)
                queue.append(parent)
    return seen


def missing_abstract(index: RepoIndex, qualname: str) -> list[str]:
    """The abstract methods of ``qualname``'s repository ancestors that neither it nor any of
    them defines concretely."""
    _, facts = index.classes[qualname]
    if facts.abstract_methods:
        return []
    abstract: set[str] = set()
    concrete = set(facts.methods)
    for ancestor in _ancestors(index, qualname):
        _, found = index.classes[ancestor]
        abstract.update(found.abstract_methods)
        concrete.update(set(found.methods) - set(found.abstract_methods))
    return sorted(abstract - concrete)


def static_breaks(index: RepoIndex, rels: Iterable[str]) -> list[ContractBreak]:
    """One ``missing-abstract`` break per (class, method) for the classes of ``rels``."""
    breaks: list[ContractBreak] = []
    for rel in sorted(set(rels)):
        if rel not in index.files or index.parse(rel) is None:
            continue
        module = index.files[rel].module
        for cls in index.facts[rel].classes:
            qualname = f"{module}.{cls.qualname}" if module else cls.qualname
            if qualname not in index.classes:
                continue
            for method in missing_abstract(index, qualname):
                message = f"{cls.name} does not implement abstract method {method} of its base"
                breaks.append(
                    ContractBreak("missing-abstract", cls.name, method, None, message, rel)
                )
    return breaks
