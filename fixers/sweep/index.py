"""The repository index: classes across modules, bases resolved, subclasses of a contract's base.

Only files that can matter are parsed: a file is parsed when its bytes contain the base name or
the name of a class (or alias) already known to be in the hierarchy, repeated until no new names
appear. What each file holds is cached in an ``IndexCache`` (``fixers.sweep.content``: by
content hash for the files parsed, by file stats for the others), and file stats say which
files changed, so a re-sweep after a one-file change reads only that file.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from fixers.contracts.inference import INFERENCE_MARKERS, infer_contracts
from fixers.contracts.model import Contract
from fixers.repo.files import SourceFile, list_python_files, module_map, module_names
from fixers.repo.paths import DEFAULT_MAX_FILE_BYTES, escaping, name_problem
from fixers.sweep.content import IndexCache as IndexCache
from fixers.sweep.content import IndexStats as IndexStats
from fixers.sweep.content import TreeContent
from fixers.sweep.pyfacts import (
    ClassFacts,
    FactsError,
    ModuleFacts,
    module_facts_from_tree,
    parse_python,
)

_MAX_DEPTH = 32
_MARKERS = tuple(frozenset({marker}) for marker in INFERENCE_MARKERS)


@dataclass(frozen=True)
class Member:
    """A class in a contract's hierarchy, with its parents that are in the hierarchy too."""

    qualname: str
    module: str
    rel: str
    facts: ClassFacts
    parents: tuple[str, ...]
    direct_child_of_base: bool


@dataclass(frozen=True)
class Hierarchy:
    """All transitive subclasses of a contract's base found in the repository."""

    contract: Contract
    bases: frozenset[str]
    members: dict[str, Member]

    def children(self, qualname: str) -> list[str]:
        """Members whose parents include ``qualname``."""
        return [q for q, m in self.members.items() if qualname in m.parents]

    def ancestors(self, qualname: str) -> list[Member]:
        """Repository MRO below the base (depth-first, each class once), ``qualname`` first."""
        seen: list[str] = []
        stack = [qualname]
        while stack:
            current = stack.pop(0)
            if current in seen or current not in self.members:
                continue
            seen.append(current)
            stack.extend(self.members[current].parents)
        return [self.members[q] for q in seen]


def _reporting(files: Collection[str], progress: Callable[[int, int], None]) -> Iterator[str]:
    """``files``, calling ``progress(done, total)`` every 256 of them."""
    for done, rel in enumerate(files, start=1):
        if done % 256 == 0:
            progress(done, len(files))
        yield rel


class RepoIndex:
    """Lazily parsed view of one repository tree."""

    def __init__(
        self,
        root: Path,
        cache: IndexCache | None = None,
        exclude: tuple[str, ...] = (),
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> None:
        self.root = root
        self.cache = cache if cache is not None else IndexCache()
        self.max_file_bytes = max_file_bytes
        rels, self.listing = list_python_files(root, exclude)
        # Files reached through a symlink out of the tree, or named with control characters,
        # are never read: reported as skips.
        self.errors: dict[str, str] = escaping(root, rels)
        self.errors.update({rel: why for rel in rels if (why := name_problem(rel)) is not None})
        rels = [rel for rel in rels if rel not in self.errors]
        self.files: dict[str, SourceFile] = {f.rel: f for f in module_names(root, rels)}
        self.by_module: dict[str, str] = module_map(self.files.values())
        self.stats = IndexStats(files=len(self.files))
        self.facts: dict[str, ModuleFacts] = {}
        self.content = TreeContent(root, self.cache, max_file_bytes, self.errors, self.stats)
        self._classes: dict[str, tuple[str, ClassFacts]] | None = None
        self._trees: dict[str, ast.Module | None] = {}
        self._memo: dict[tuple[str, str], str] = {}

    def read(self, rel: str) -> bytes | None:
        """The bytes of one file (None: unreadable, reason kept in ``errors``)."""
        return self.content.read(rel)

    def digest(self, rel: str) -> str | None:
        """Content hash of a file, from the stat cache when size and mtime did not change."""
        return self.content.digest(rel)

    def contains_any(self, rel: str, names: frozenset[str]) -> bool:
        """Whether the file's bytes contain any of ``names`` (cached per content or stat)."""
        return self.content.contains_any(rel, names)

    def expect(self, names: frozenset[str]) -> None:
        """Search every file for ``names`` too whenever it is searched (the bases the sweep
        will look for: the first pass over the files answers them without a second read)."""
        self.content.expected = names

    def _tree(self, rel: str) -> ast.Module | None:
        data = self.read(rel)
        if data is None:
            return None
        start = time.perf_counter()
        try:
            tree = parse_python(data, rel)
        except FactsError as exc:
            self.errors[rel] = str(exc)
            return None
        finally:
            self.stats.timed("parse", start)
        self.stats.parsed += 1
        return tree

    def tree(self, rel: str) -> ast.Module | None:
        """The ``ast`` of one file, parsed once per sweep (None when it is not Python)."""
        if rel not in self._trees:
            digest = self.digest(rel)
            cached = self.cache.trees.get(digest) if digest is not None else None
            tree = cached if cached is not None else self._tree(rel)
            if tree is not None and digest is not None:
                self.cache.trees[digest] = tree
            self._trees[rel] = tree
        return self._trees[rel]

    def parse(self, rel: str) -> ModuleFacts | None:
        """Facts of one file (None, with ``errors[rel]`` set, when it cannot be read as Python)."""
        if rel in self.facts:
            return self.facts[rel]
        source = self.files[rel]
        digest = self.digest(rel)
        if digest is None:
            return None
        key = (digest, source.module, source.is_package)
        cached = self.cache.facts.get(key)
        if cached is None:
            tree = self.tree(rel)
            start = time.perf_counter()
            cached = (
                self.errors.get(rel, "")
                if tree is None
                else module_facts_from_tree(tree, source.module, source.is_package)
            )
            self.stats.timed("facts", start)
            self.cache.facts[key] = cached
        if isinstance(cached, str):
            self.errors[rel] = cached
            return None
        self.facts[rel] = cached
        self._classes = None
        self._memo.clear()
        return cached

    def inferred_contracts(self) -> list[Contract]:
        """Contracts declared in the tree by an ``__init_subclass__`` guard."""
        found: list[Contract] = []
        marked: Iterable[str] = self.files
        for marker in _MARKERS:  # each file is searched for a marker only if it holds the last
            marked = self.content.holding(marked, marker)
        for rel in marked:
            source = self.files[rel]
            key = (self.digest(rel) or "", source.module)
            if key not in self.cache.inferred:
                tree = self._tree(rel)
                start = time.perf_counter()
                self.cache.inferred[key] = (
                    () if tree is None else tuple(infer_contracts(tree, source.module, rel))
                )
                self.stats.timed("facts", start)
            found.extend(self.cache.inferred[key])
        return found

    @property
    def classes(self) -> dict[str, tuple[str, ClassFacts]]:
        """Every class of every parsed module, by fully qualified name."""
        if self._classes is None:
            self._classes = {}
            for rel, facts in self.facts.items():
                for cls in facts.classes:
                    prefix = f"{facts.module}." if facts.module else ""
                    self._classes[f"{prefix}{cls.qualname}"] = (rel, cls)
        return self._classes

    def module_facts(self, module: str) -> ModuleFacts | None:
        """The facts of the parsed module named ``module`` (None: unknown, or not parsed)."""
        rel = self.by_module.get(module)
        return self.facts.get(rel) if rel is not None else None

    def resolve(self, module: str, dotted: str, depth: int = 0) -> str:
        """The fully qualified name ``dotted`` stands for inside ``module`` (memoised; a cycle
        of re-exports resolves to the name itself)."""
        key = (module, dotted)
        if key not in self._memo:
            self._memo[key] = dotted
            self._memo[key] = self._resolve(module, dotted, depth)
        return self._memo[key]

    def _resolve(self, module: str, dotted: str, depth: int) -> str:
        facts = self.module_facts(module)
        if facts is None or depth > _MAX_DEPTH:
            return dotted
        head, _, rest = dotted.partition(".")
        suffix = f".{rest}" if rest else ""
        prefix = f"{facts.module}." if facts.module else ""  # a namespace alias's own module
        if any(c.qualname == head and not c.nested for c in facts.classes):
            return f"{prefix}{dotted}"
        target = dict(facts.aliases).get(head)
        if target is not None and target != head:
            return self.resolve(module, target, depth + 1) + suffix
        target = dict(facts.bindings).get(head)
        if target is not None:
            return self.canonical(target + suffix, depth + 1)
        for star in facts.star_imports:
            if star != module and self.module_facts(star) is not None:
                found = self.resolve(star, dotted, depth + 1)
                if found in self.classes:
                    return found
        return dotted

    def canonical(self, qualified: str, depth: int = 0) -> str:
        """Follow re-exports until ``qualified`` names a class definition (or stops)."""
        key = ("\0", qualified)
        if key not in self._memo:
            self._memo[key] = qualified
            self._memo[key] = self._canonical(qualified, depth)
        return self._memo[key]

    def _canonical(self, qualified: str, depth: int) -> str:
        if qualified in self.classes or depth > _MAX_DEPTH:
            return qualified
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if self.module_facts(module) is not None:
                found = self.resolve(module, ".".join(parts[cut:]), depth + 1)
                return found if found != ".".join(parts[cut:]) else qualified
        return qualified

    def _known_module(self, qualified: str) -> bool:
        parts = qualified.split(".")
        return any(".".join(parts[:cut]) in self.by_module for cut in range(1, len(parts)))

    # ---- hierarchy ---------------------------------------------------------------------------
    def _base_quals(self, contract: Contract) -> set[str]:
        return {
            q
            for q, (_, cls) in self.classes.items()
            if cls.name == contract.base
            and (contract.base_module is None or q == f"{contract.base_module}.{cls.qualname}")
        }

    def _resolve_bases(self, qual: str, rel: str, cls: ClassFacts) -> list[str]:
        module = self.files[rel].module
        out: list[str] = []
        outer = cls.qualname.rsplit(".", 1)[0] if cls.nested else None
        for base in cls.bases:
            nested = f"{module}.{outer}.{base}" if outer else None
            out.append(nested if nested in self.classes else self.resolve(module, base))
        return out

    def hierarchy(self, contract: Contract) -> Hierarchy:
        """Transitive subclasses of ``contract.base`` among the parsed modules."""
        bases = self._base_quals(contract)
        resolved = {q: self._resolve_bases(q, rel, c) for q, (rel, c) in self.classes.items()}
        members: dict[str, Member] = {}
        changed = True
        while changed:
            changed = False
            for qual, parents in resolved.items():
                if qual in members or qual in bases:
                    continue
                direct = any(
                    p in bases
                    or (
                        p not in self.classes
                        and not self._known_module(p)
                        and p.rsplit(".", 1)[-1] == contract.base
                    )
                    for p in parents
                )
                inner = tuple(p for p in parents if p in members)
                if direct or inner:
                    rel, cls = self.classes[qual]
                    members[qual] = Member(qual, self.files[rel].module, rel, cls, inner, direct)
                    changed = True
        # Parents may have joined after their children were first seen: fix the links.
        for qual, member in list(members.items()):
            linked = tuple(p for p in resolved[qual] if p in members)
            members[qual] = Member(
                qual, member.module, member.rel, member.facts, linked, member.direct_child_of_base
            )
        return Hierarchy(contract, frozenset(bases), members)

    def _names_for(self, hierarchy: Hierarchy) -> set[str]:
        names = {m.facts.name for m in hierarchy.members.values()}
        wanted = set(hierarchy.members) | set(hierarchy.bases)
        for facts in self.facts.values():
            for local, target in (*facts.bindings, *facts.aliases):
                if (
                    self.resolve(facts.module, local) in wanted
                    or target.rsplit(".", 1)[-1] in names
                ):
                    names.add(local)
        return names

    def load_hierarchies(
        self, contracts: list[Contract], progress: Callable[[int, int], None] | None = None
    ) -> list[Hierarchy]:
        """Parse exactly the files that can hold a contract's subclasses, then build hierarchies."""
        names = {c.base for c in contracts}
        searched: set[str] = set()
        while True:
            pending = frozenset(names - searched)
            if not pending:
                break
            searched |= pending
            files = self.files if progress is None else _reporting(self.files, progress)
            unparsed = (rel for rel in files if rel not in self.facts and rel not in self.errors)
            for rel in self.content.holding(unparsed, pending):
                self.parse(rel)
            if progress is not None:
                progress(len(self.files), len(self.files))
            hierarchies = [self.hierarchy(c) for c in contracts]
            for found in hierarchies:
                names |= self._names_for(found)
        return [self.hierarchy(c) for c in contracts]
