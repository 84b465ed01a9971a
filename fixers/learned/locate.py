"""Which class a contract break means: a log names a class by its simple name, and a repository
may define that name twice (a library's sync and asyncio twins: ``limits`` has two
``MemoryStorage`` classes on two bases of one name). The one meant is the one that has the
break, read from the tree at the failing commit."""

from __future__ import annotations

import re
from dataclasses import replace

from fixers.contracts.model import Contract
from fixers.learned.breaks import LEARNED_SOURCE, ContractBreak
from fixers.learned.lookup import arg_names, class_function, member_of
from fixers.learned.static_breaks import missing_abstract
from fixers.sweep.index import RepoIndex


def named_classes(index: RepoIndex, brk: ContractBreak) -> list[str]:
    """The qualified names of the classes ``brk`` may mean, in a stable order."""
    return sorted(
        q
        for q, (rel, c) in index.classes.items()
        if c.name == brk.class_name and brk.path in (None, rel)
    )


def undefined_reason(index: RepoIndex, class_name: str) -> str:
    """Why no class ``class_name`` is in the index: the files that define it but could not be
    read as Python (with why), or that no file defines it."""
    pattern = re.compile(rb"^[ \t]*class[ \t]+" + re.escape(class_name.encode()) + rb"\b", re.M)
    unread = [
        f"{rel} ({why})"
        for rel, why in sorted(index.errors.items())
        if (data := index.read(rel)) is not None and pattern.search(data)
    ]
    if unread:
        return f"class {class_name} is defined only in files that were not read: " + "; ".join(
            unread
        )
    return f"class {class_name} is not defined in the repository"


def locate(index: RepoIndex, brk: ContractBreak) -> list[ContractBreak]:
    """``brk`` with its file, where a log's class name is defined more than once: each class of
    that name that has the break (all of them when none visibly does)."""
    if brk.path is not None:
        return [brk]
    index.load_hierarchies(
        [Contract(name=f"probe:{brk.class_name}", base=brk.class_name, source=LEARNED_SOURCE)]
    )
    named = named_classes(index, brk)
    if len(named) < 2:
        return [brk]
    broken = [q for q in named if has_break(index, q, brk)] or named
    return [replace(brk, path=index.classes[q][0]) for q in broken]


def has_break(index: RepoIndex, qualname: str, brk: ContractBreak) -> bool:
    """Whether the class ``qualname`` fails the way ``brk`` says, read from the tree."""
    if brk.kind == "missing-abstract":
        return brk.method in missing_abstract(index, qualname)
    if brk.kind == "positional-count":
        return brk.method in index.classes[qualname][1].methods
    function = class_function(index, member_of(index, qualname), brk.method)
    if function is None:
        return False
    names, takes_kwargs = arg_names(function)
    return brk.keyword not in names and not takes_kwargs
