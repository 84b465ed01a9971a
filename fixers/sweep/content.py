"""The bytes of a tree's files during one sweep, and which of the names asked for each one holds.

A cold sweep reads every file once and searches its bytes; it hashes only the files the index
parses (a content hash of every file cost more than every search together). What a sweep
learnt stays in an ``IndexCache`` under each file's stat, so a re-sweep reads only the files
that changed. Names asked together are searched through a piece they share (``anchor_plan``):
a file that holds none of them costs one search, not one per name.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fixers.repo.paths import FileRefused, read_repo_file_stat

if TYPE_CHECKING:
    import ast

    from fixers.contracts.model import Contract
    from fixers.sweep.pyfacts import ModuleFacts

# The bytes read during a sweep are kept for its later passes up to this much; past it a later
# pass reads the file again, so memory stays bounded whatever the size of the tree.
KEPT_BYTES = 64 << 20
# Names asked together are grouped by a shared piece at least this long: shorter pieces
# ("self", "Base") are in most files and would filter nothing.
MIN_ANCHOR = 6

Plan = tuple[tuple[bytes, tuple[tuple[str, bytes], ...]], ...]
NONE: frozenset[str] = frozenset()


class Found:
    """The names one file's bytes were searched for (``asked``) and those they hold (``held``).

    The sets are shared between files (``TreeContent`` interns them): most files are asked the
    same names and hold none, so a file costs one small object, whatever the names."""

    __slots__ = ("asked", "held")

    def __init__(self, asked: frozenset[str] = NONE, held: frozenset[str] = NONE) -> None:
        self.asked = asked
        self.held = held


@dataclass
class IndexCache:
    """What survives between sweeps of one tree: stats, digests and per-content results.

    ``stats``: file -> (mtime, size, content digest) of each file whose content was hashed
    (a ``git:`` blob id when the tree was written from git); ``names``, ``facts``,
    ``inferred`` and ``trees`` are keyed by that digest and may be shared with another tree.
    ``scans``: file -> (mtime, ctime, size, names found) of each file searched but not hashed;
    the ctime too, since nothing but a change of the file sets it, and never shared.
    """

    stats: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    names: dict[str, Found] = field(default_factory=dict)
    facts: dict[tuple[str, str, bool], ModuleFacts | str] = field(default_factory=dict)
    inferred: dict[tuple[str, str], tuple[Contract, ...]] = field(default_factory=dict)
    trees: dict[str, ast.Module] = field(default_factory=dict)
    scans: dict[str, tuple[int, int, int, Found]] = field(default_factory=dict)


@dataclass
class IndexStats:
    """Counters for one sweep (the bench and tests read them); ``seconds``: the time spent
    reading, searching, hashing, parsing and extracting facts, each summed over the files."""

    files: int = 0
    read: int = 0
    parsed: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def timed(self, phase: str, since: float) -> None:
        """Add the time from ``since`` (a ``perf_counter`` reading) to ``phase``."""
        self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - since


def _pieces(name: bytes) -> set[bytes]:
    """The pieces of ``name`` that can stand for it in a search: every part of it at least
    ``MIN_ANCHOR`` long (the whole name when it is shorter)."""
    if len(name) <= MIN_ANCHOR:
        return {name}
    return {
        name[start:end]
        for start in range(len(name) - MIN_ANCHOR + 1)
        for end in range(start + MIN_ANCHOR, len(name) + 1)
    }


def anchor_plan(names: frozenset[str]) -> Plan:
    """``names`` in groups, each with a piece (its anchor) that every name of the group holds:
    a file without the anchor holds no name of its group. Greedy, in one ordering of the pieces
    (shared by the most names, then the longest): a piece that two names still left share makes
    a group of them; each name left then is its own anchor."""
    encoded = {name: name.encode() for name in sorted(names)}
    holders: dict[bytes, list[str]] = {}
    for name, text in encoded.items():
        for piece in _pieces(text):
            holders.setdefault(piece, []).append(name)
    shared = [piece for piece, held in holders.items() if len(held) > 1]
    shared.sort(key=lambda piece: (-len(holders[piece]), -len(piece), piece))
    left = set(encoded)
    plan: list[tuple[bytes, tuple[tuple[str, bytes], ...]]] = []
    for piece in shared:
        group = [name for name in holders[piece] if name in left]
        if len(group) > 1:
            plan.append((piece, tuple((name, encoded[name]) for name in group)))
            left.difference_update(group)
    plan.extend((encoded[name], ((name, encoded[name]),)) for name in sorted(left))
    return tuple(plan)


def search(data: bytes, plan: Plan) -> tuple[frozenset[str], tuple[bytes, ...]]:
    """The names of ``plan`` that ``data`` holds, and the anchors it lacks."""
    held: list[str] = []
    lacking: list[bytes] = []
    for anchor, group in plan:
        if anchor in data:
            held.extend(n for n, e in group if len(e) == len(anchor) or e in data)
        else:
            lacking.append(anchor)
    return (frozenset(held) if held else NONE), tuple(lacking)


def undecided(names: frozenset[str], lacking: tuple[bytes, ...]) -> frozenset[str]:
    """The names of ``names`` that a file lacking every piece of ``lacking`` may still hold."""
    return frozenset(n for n in names if not any(piece in n.encode() for piece in lacking))


class TreeContent:
    """The files of one tree for one sweep: each read at most once (within ``KEPT_BYTES``),
    hashed only when asked for its digest, searched for names.

    ``expected``: names searched for in a file whenever it is searched at all (the contracts'
    bases: the first pass over the files, for the inferred contracts, answers them too, so
    the next pass needs no bytes)."""

    def __init__(
        self,
        root: Path,
        cache: IndexCache,
        max_file_bytes: int,
        errors: dict[str, str],
        stats: IndexStats,
    ) -> None:
        self.root = root
        self.cache = cache
        self.max_file_bytes = max_file_bytes
        self.errors = errors
        self.stats = stats
        self.expected = NONE
        self._prefix = os.path.join(root, "")
        self._data: dict[str, bytes] = {}
        self._kept = 0
        self._last: tuple[str, bytes] = ("", b"")
        self._read_stat: dict[str, tuple[int, int, int]] = {}
        self._found: dict[str, Found] = {}
        self._digests: dict[str, str] = {}
        self._plans: dict[frozenset[str], Plan] = {}
        self._lacking: dict[str, tuple[bytes, ...]] = {}
        self._undecided: dict[tuple[frozenset[str], tuple[bytes, ...]], frozenset[str]] = {}
        self._unions: dict[tuple[frozenset[str], frozenset[str]], frozenset[str]] = {}
        self._interned: dict[frozenset[str], frozenset[str]] = {}

    def read(self, rel: str) -> bytes | None:
        """The bytes of one file (None: unreadable, reason kept in ``errors``)."""
        data = self._data.get(rel)
        if data is not None:
            return data
        if self._last[0] == rel:  # past the budget, the file read last is still at hand
            return self._last[1]
        start = time.perf_counter()
        try:
            data, info = read_repo_file_stat(self.root, rel, self.max_file_bytes)
        except FileRefused as exc:
            self.errors[rel] = str(exc)
            return None
        except OSError as exc:
            self.errors[rel] = f"unreadable: {exc.strerror or exc}"
            return None
        finally:
            self.stats.timed("read", start)
        if rel not in self._read_stat:
            self.stats.read += 1
        self._read_stat[rel] = (info.st_mtime_ns, info.st_ctime_ns, info.st_size)
        if self._kept + len(data) <= KEPT_BYTES:
            self._data[rel] = data
            self._kept += len(data)
        else:
            self._last = (rel, data)
        return data

    def _stat(self, rel: str) -> os.stat_result | None:
        try:
            return os.stat(self._prefix + rel)
        except OSError as exc:
            self.errors[rel] = f"unreadable: {exc.strerror or exc}"
            return None

    def found(self, rel: str) -> Found | None:
        """What is known of the names in one file: by content when its stat matches a digest
        in the cache, by the cache's scan of it when its stat matches that, else nothing yet
        (the file is read). None: the file cannot be read."""
        found = self._found.get(rel)
        if found is not None:
            return found
        hashed = self.cache.stats.get(rel)
        scanned = self.cache.scans.get(rel)
        if hashed is not None or scanned is not None:
            st = self._stat(rel)
            if st is None:
                return None
            if hashed is not None and hashed[:2] == (st.st_mtime_ns, st.st_size):
                self._digests[rel] = hashed[2]
                found = self.cache.names.setdefault(hashed[2], Found())
            elif scanned is not None and scanned[:3] == (
                st.st_mtime_ns,
                st.st_ctime_ns,
                st.st_size,
            ):
                found = scanned[3]
        if found is None:
            if self.read(rel) is None:
                return None
            found = Found()
            self.cache.stats.pop(rel, None)
            self.cache.scans[rel] = (*self._read_stat[rel], found)
        self._found[rel] = found
        return found

    def digest(self, rel: str) -> str | None:
        """Content hash of a file, from the cache when its stat did not change; once hashed,
        what the sweep found in the file is kept under the hash (shared by content)."""
        digest = self._digests.get(rel)
        if digest is not None:
            return digest
        found = self.found(rel)
        if rel in self._digests or found is None:
            return self._digests.get(rel)
        data = self.read(rel)
        if data is None:
            return None
        start = time.perf_counter()
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        self.stats.timed("hash", start)
        mtime, ctime, size = self._read_stat[rel]
        self.cache.stats[rel] = (mtime, size, digest)
        scanned = self.cache.scans.pop(rel, None)
        shared = self.cache.names.setdefault(digest, Found())
        if scanned is not None and scanned[:3] == (mtime, ctime, size):
            # Found in the bytes just hashed (not in those of a file changed since).
            shared.asked = self._union(shared.asked, found.asked)
            shared.held = self._union(shared.held, found.held)
        self._found[rel] = shared
        self._digests[rel] = digest
        return digest

    def _union(self, one: frozenset[str], other: frozenset[str]) -> frozenset[str]:
        """``one | other``, the same set object for the same union (files share their sets)."""
        key = (one, other)
        union = self._unions.get(key)
        if union is None:
            merged = one | other
            union = self._unions[key] = self._interned.setdefault(merged, merged)
        return union

    def holding(self, rels: Iterable[str], names: frozenset[str]) -> Iterator[str]:
        """The files of ``rels`` whose bytes contain any of ``names``, in their order (a loop
        of its own: a pass over a large tree is mostly files answered from what is known)."""
        known = self._found.get
        for rel in rels:
            found = known(rel)
            if found is not None and names <= found.asked:
                if not names.isdisjoint(found.held):
                    yield rel
            elif self.contains_any(rel, names):
                yield rel

    def contains_any(self, rel: str, names: frozenset[str]) -> bool:
        """Whether the file's bytes contain any of ``names`` (cached per content or stat)."""
        found = self._found.get(rel)
        if found is None:
            found = self.found(rel)
            if found is None:
                return False
        if not names <= found.asked and not self._search(rel, found, names | self.expected):
            return False
        return not names.isdisjoint(found.held)

    def _search(self, rel: str, found: Found, names: frozenset[str]) -> bool:
        """Search the file for those of ``names`` not asked before (False: unreadable).

        A name holding a piece that an earlier search of this sweep did not find in the file
        is not in it either: a subclass's name found in the next pass usually holds a piece of
        the names of the pass before, so most files are not searched again."""
        missing = names - found.asked
        lacking = self._lacking.get(rel, ())
        left = missing
        if lacking:
            key = (missing, lacking)
            cached = self._undecided.get(key)
            if cached is None:
                cached = self._undecided[key] = undecided(missing, lacking)
            left = cached
        if left:
            data = self.read(rel)
            if data is None:
                return False
            plan = self._plans.get(left)
            if plan is None:
                plan = self._plans[left] = anchor_plan(left)
            start = time.perf_counter()
            held, more = search(data, plan)
            self.stats.timed("search", start)
            if more:
                self._lacking[rel] = lacking + more
            if held:
                found.held = self._union(found.held, held)
        found.asked = self._union(found.asked, missing)
        return True
