"""One tree on disk per repository for the contract check, moved from commit to commit.

The check sweeps trees that exist only as git objects (a PR head merged onto its base by
``git merge-tree``). Writing a torch-sized tree out costs seconds, so each repository keeps
one directory (``Settings.contract_trees_dir/owner/name``) holding the swept files
(``contract_check_blobs``) of the last tree checked, and each check rewrites only the files
that differ from it: a PR's own files, and the base's latest commits. The directory is a cache
and nothing else: the tree it holds is written beside it (``name.tree``) only once complete,
so a check killed half way leaves a directory the next one rewrites in full.

One check per repository at a time holds the directory (an ``flock`` on ``name.lock``, which
the kernel releases when a holder dies). Warm cache: each written file's stat is recorded with
its git blob id as its content digest, so the sweep (``fixers.sweep.index.RepoIndex``) re-reads
no file it has seen, and the per-content results (names found, facts, parse trees, inferred
contracts) and the base's violations per base tree stay in this process between checks.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bot.git import GitError, cat_file
from bot.pipeline.contract_check.blobs import (
    blob_sizes,
    changed_blobs,
    read_size,
    skip_bytes,
    swept_blobs,
)
from fixers.contracts.model import CONFIG_FILES, load_config
from fixers.repo.paths import DEFAULT_MAX_FILE_BYTES
from fixers.sweep.index import IndexCache
from fixers.sweep.violation_types import Violation


class OverBudget(Exception):
    """A check that would write more than its budget; the message says how much (nothing of the
    files that would pass it is written)."""


@dataclass
class WriteBudget:
    """What one check may write under the data dir, both trees together: files and bytes (a
    file over the per-file cap is a sparse file: a file, no bytes)."""

    max_files: int
    max_bytes: int
    files: int = 0
    bytes: int = 0

    def charge(self, files: int, size: int) -> None:
        """Count a batch about to be written; ``OverBudget`` (nothing counted) past the budget."""
        if self.files + files > self.max_files or self.bytes + size > self.max_bytes:
            raise OverBudget(
                f"the trees would need {self.files + files:,} files and {self.bytes + size:,} "
                f"bytes written, over the check's budget of {self.max_files:,} files and "
                f"{self.max_bytes:,} bytes"
            )
        self.files += files
        self.bytes += size


MAX_CACHED_REPOSITORIES = 8  # the per-content caches of a repository cost memory: keep a few
MAX_BASES = 8  # base trees whose violations are kept per repository (PRs into a few branches)


@dataclass
class RepositoryState:
    """What this process keeps between checks of one repository."""

    cache: IndexCache = field(default_factory=IndexCache)
    stats_tree: str = ""  # the tree on disk that ``cache.stats`` describes
    base_violations: OrderedDict[str, list[Violation]] = field(default_factory=OrderedDict)

    def base_result(self, tree: str) -> list[Violation] | None:
        """The violations of base tree ``tree``, if swept before."""
        found = self.base_violations.get(tree)
        if found is not None:
            self.base_violations.move_to_end(tree)
        return found

    def remember_base(self, tree: str, violations: list[Violation]) -> None:
        """Keep ``tree``'s violations (the oldest of more than ``MAX_BASES`` are dropped)."""
        self.base_violations[tree] = violations
        while len(self.base_violations) > MAX_BASES:
            self.base_violations.popitem(last=False)


_states: OrderedDict[str, RepositoryState] = OrderedDict()
_states_lock = threading.Lock()


def repository_state(repository: str) -> RepositoryState:
    """This process's state for ``repository`` (least recently used ones are forgotten)."""
    with _states_lock:
        state = _states.pop(repository, None) or RepositoryState()
        _states[repository] = state
        while len(_states) > MAX_CACHED_REPOSITORIES:
            _states.popitem(last=False)
        return state


def forget_caches() -> None:
    """Drop every repository's state (the next check of each is a cold one)."""
    with _states_lock:
        _states.clear()


@dataclass
class TreeOnDisk:
    """The repository's directory, the tree it holds, and the cache that knows its files."""

    root: Path
    state: RepositoryState
    tree: str = ""
    _dirs: set[Path] = field(default_factory=set)

    @property
    def cache(self) -> IndexCache:
        """The sweep cache for this directory."""
        return self.state.cache

    @property
    def _marker(self) -> Path:
        return self.root.with_name(self.root.name + ".tree")

    def resume(self) -> None:
        """Read which tree the directory holds; an incomplete one is emptied."""
        with contextlib.suppress(OSError):
            self.tree = self._marker.read_text().strip()
        if not self.tree or not self.root.is_dir():
            shutil.rmtree(self.root, ignore_errors=True)
            self.tree = ""
        if self.state.stats_tree != self.tree:  # another process moved it: stats are stale
            self.cache.stats.clear()

    def move_to(self, repo: Path, tree: str, budget: WriteBudget | None = None) -> None:
        """Make the directory hold ``tree``, rewriting only the files that differ (all of them
        when the repository's configuration differs: its file-size cap may have changed);
        ``budget`` is charged before each batch is written (``OverBudget`` past it)."""
        if tree == self.tree:
            return
        self._marker.unlink(missing_ok=True)
        self.state.stats_tree = ""
        changed = self._changes(repo, tree)
        if changed is None or CONFIG_FILES & changed.keys():
            shutil.rmtree(self.root, ignore_errors=True)
            self.cache.stats.clear()
            self._dirs.clear()
            writes = sorted(swept_blobs(repo, tree).items(), key=_configs_first)
        else:
            for path in [p for p, blob in changed.items() if blob is None]:
                self._remove(path)
            writes = sorted(((p, b) for p, b in changed.items() if b), key=_configs_first)
        self.root.mkdir(parents=True, exist_ok=True)
        self._write_blobs(repo, writes, budget)
        self._marker.write_text(tree)
        self.tree = self.state.stats_tree = tree

    def _changes(self, repo: Path, tree: str) -> dict[str, str | None] | None:
        """What differs from the tree on disk, or None when that is unknown: nothing on disk,
        or its tree pruned from the repository since (a merge's tree is no commit's: ``git gc``
        drops it once it is old)."""
        if not self.tree:
            return None
        try:
            return changed_blobs(repo, self.tree, tree)
        except GitError:
            return None

    def _remove(self, path: str) -> None:
        self.cache.stats.pop(path, None)
        target = self.root / path
        target.unlink(missing_ok=True)
        parent = target.parent
        while parent != self.root and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            self._dirs.discard(parent)
            parent = parent.parent

    def _write_blobs(
        self, repo: Path, blobs: list[tuple[str, str]], budget: WriteBudget | None
    ) -> None:
        configs = [(p, b) for p, b in blobs if p in CONFIG_FILES]
        sources = [(p, b) for p, b in blobs if p not in CONFIG_FILES]
        self._stream(repo, configs, max_bytes=DEFAULT_MAX_FILE_BYTES, budget=budget)
        # The sweep skips a file over the repository's cap by its size, before reading it: such
        # a file is written as a sparse file of that size, not copied.
        cap = load_config(self.root).max_file_bytes
        self._stream(repo, sources, max_bytes=cap, budget=budget)

    def _stream(
        self,
        repo: Path,
        blobs: list[tuple[str, str]],
        *,
        max_bytes: int,
        budget: WriteBudget | None,
    ) -> None:
        if not blobs:
            return
        if budget is not None:
            sizes = blob_sizes(repo, [blob for _, blob in blobs])
            written = sum(sizes[blob] for _, blob in blobs if sizes[blob] <= max_bytes)
            budget.charge(len(blobs), written)
        with cat_file(repo, [blob for _, blob in blobs]) as out:
            for path, blob in blobs:
                size = read_size(out, blob)
                target = self.root / path
                self._mkdirs(target.parent)
                target.unlink(missing_ok=True)
                if size > max_bytes:
                    skip_bytes(out, size + 1)
                    with target.open("wb") as handle:
                        handle.truncate(size)
                    self.cache.stats.pop(path, None)
                    continue
                data = out.read(size)
                out.read(1)  # the newline after each object
                target.write_bytes(data)
                stat = target.stat()
                self.cache.stats[path] = (stat.st_mtime_ns, stat.st_size, f"git:{blob}")

    def _mkdirs(self, folder: Path) -> None:
        if folder not in self._dirs:
            folder.mkdir(parents=True, exist_ok=True)
            self._dirs.add(folder)


def _configs_first(item: tuple[str, str]) -> tuple[bool, str]:
    return item[0] not in CONFIG_FILES, item[0]


@contextlib.contextmanager
def tree_of_repository(trees_dir: Path, repository: str) -> Iterator[TreeOnDisk]:
    """The repository's directory (``trees_dir/owner/name``), held by this check alone.

    The directory is named after the repository, so that a repository that is itself a package
    keeps its module names.
    """
    owner, name = repository.split("/", 1)
    root = trees_dir.resolve() / owner / name
    root.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(root.with_name(name + ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        on_disk = TreeOnDisk(root, repository_state(repository))
        on_disk.resume()
        yield on_disk
    finally:
        os.close(fd)
