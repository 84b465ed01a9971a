"""The repository index: classes across modules, bases resolved, subclasses of a contract's base.

Only files that can matter are parsed: a file is parsed when its bytes contain the base name or
the name of a class (or alias) already known to be in the hierarchy, repeated until no new names
appear. Everything read is cached by content hash in an ``IndexCache``, and file stats say which
files changed, so a re-sweep after a one-file change reads only that file.
"""

from __future__ import annotations

import ast
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fixers.contracts.inference import INFERENCE_MARKERS, infer_contracts
from fixers.contracts.model import Contract
from fixers.repo.files import SourceFile, list_python_files, module_map, module_names
from fixers.repo.paths import (
    DEFAULT_MAX_FILE_BYTES,
    FileRefused,
    escaping,
    name_problem,
    read_repo_file,
)
from fixers.sweep.pyfacts import (
    ClassFacts,
    FactsError,
    ModuleFacts,
    module_facts_from_tree,
    parse_python,
)

_MAX_DEPTH = 32


@dataclass
class IndexCache:
    """What survives between sweeps of one tree: stats, digests and per-content results."""

    stats: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    names: dict[str, dict[str, bool]] = field(default_factory=dict)
    facts: dict[tuple[str, str, bool], ModuleFacts | str] = field(default_factory=dict)
    inferred: dict[tuple[str, str], tuple[Contract, ...]] = field(default_factory=dict)
    trees: dict[str, ast.Module] = field(default_factory=dict)


@dataclass
class IndexStats:
    """Counters for one sweep (the bench and tests read them)."""

    files: int = 0
    read: int = 0
    parsed: int = 0


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
        self._data: dict[str, bytes] = {}
        self._digests: dict[str, str] = {}
        self._classes: dict[str, tuple[str, ClassFacts]] | None = None
        self._trees: dict[str, ast.Module | None] = {}
        self._memo: dict[tuple[str, str], str] = {}

    def read(self, rel: str) -> bytes | None:
        """The bytes of one file, read at most once per sweep (None: unreadable, reason kept)."""
        if rel in self._data:
            return self._data[rel]
        try:
            data = read_repo_file(self.root, rel, self.max_file_bytes)
        except FileRefused as exc:
            self.errors[rel] = str(exc)
            return None
        except OSError as exc:
            self.errors[rel] = f"unreadable: {exc.strerror or exc}"
            return None
        self.stats.read += 1
        self._data[rel] = data
        return data

    def digest(self, rel: str) -> str | None:
        """Content hash of a file, from the stat cache when size and mtime did not change."""
        if rel in self._digests:
            return self._digests[rel]
        try:
            st = os.stat(self.root / rel)
        except OSError as exc:
            self.errors[rel] = f"unreadable: {exc.strerror or exc}"
            return None
        cached = self.cache.stats.get(rel)
        if cached is not None and cached[:2] == (st.st_mtime_ns, st.st_size):
            self._digests[rel] = cached[2]
            return cached[2]
        data = self.read(rel)
        if data is None:
            return None
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        self.cache.stats[rel] = (st.st_mtime_ns, st.st_size, digest)
        self._digests[rel] = digest
        return digest

    def contains_any(self, rel: str, names: frozenset[str]) -> bool:
        """Whether the file's bytes contain any of ``names`` (cached per content hash)."""
        digest = self.digest(rel)
        if digest is None:
            return False
        known = self.cache.names.setdefault(digest, {})
        missing = [n for n in names if n not in known]
        if missing:
            data = self.read(rel)
            if data is None:
                return False
            for name in missing:
                known[name] = name.encode() in data
        return any(known[n] for n in names)

    def _tree(self, rel: str) -> ast.Module | None:
        data = self.read(rel)
        if data is None:
            return None
        try:
            tree = parse_python(data, rel)
        except FactsError as exc:
            self.errors[rel] = str(exc)
            return None
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
            cached = (
                self.errors.get(rel, "")
                if tree is None
                else module_facts_from_tree(tree, source.module, source.is_package)
            )
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
        for rel, source in self.files.items():
            if not all(self.contains_any(rel, frozenset({m})) for m in INFERENCE_MARKERS):
                continue
            key = (self.digest(rel) or "", source.module)
            if key not in self.cache.inferred:
                tree = self._tree(rel)
                self.cache.inferred[key] = (
                    () if tree is None else tuple(infer_contracts(tree, source.module, rel))
                )
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
            for done, rel in enumerate(self.files, start=1):
                if progress is not None and done % 256 == 0:
                    progress(done, len(self.files))
                if (
                    rel not in self.facts
                    and rel not in self.errors
                    and self.contains_any(rel, pending)
                ):
                    self.parse(rel)
            if progress is not None:
                progress(len(self.files), len(self.files))
            hierarchies = [self.hierarchy(c) for c in contracts]
            for found in hierarchies:
                names |= self._names_for(found)
        return [self.hierarchy(c) for c in contracts]
