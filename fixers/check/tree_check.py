"""A working tree against its base: the violations it adds, and fixes for just those.

Each tree is swept with its own rules: the contracts it defines (built in, configured and
inferred from its own source) and its own ``.repairbot.toml``. A contract the working tree
changes (a hook renamed in the base, a method made abstract, a contract newly declared) therefore
turns every subclass it breaks into an introduced violation, where sweeping the base with the
working tree's contract would count them as already broken. The two sweeps share every cache
keyed by content, so a file the change left alone is parsed once; the cache keyed by path and
mtime stays per tree, since a base file and a working-tree file may share a path, a size and an
mtime and still differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fixers.check.base_tree import without_hook_env
from fixers.check.introduced import introduced
from fixers.evidence.import_check import DEFAULT_PRELOAD, check_imports, imported_of
from fixers.learned.history import History
from fixers.learned.static_breaks import static_breaks
from fixers.sandbox import STRICT, SandboxOptions
from fixers.sweep.index import IndexCache
from fixers.sweep.outcome import FixResult, Skip, SweepResult
from fixers.sweep.run import (
    SweepState,
    attach_imports,
    fix_in_memory,
    learn_from,
    run_sweep,
    write_changes,
)
from fixers.sweep.violation_types import Violation


@dataclass
class TreeCheck:
    """One comparison: the working tree's sweep, the base's, and what the working tree adds."""

    head: SweepState
    base: SweepResult
    introduced: list[Violation]

    @property
    def existing(self) -> int:
        """How many of the working tree's violations the base already has."""
        return len(self.head.report.violations) - len(self.introduced)

    def new_skips(self) -> list[Skip]:
        """Files the working-tree sweep could not read that the base sweep could."""
        known = {skip.path for skip in self.base.skips}
        return [skip for skip in self.head.report.skips if skip.path not in known]


@dataclass
class FixOutcome:
    """What ``fix_introduced`` wrote, what it left alone, and the check after writing."""

    result: FixResult
    written: list[str]
    after: TreeCheck
    not_written: list[Skip] = field(default_factory=list)


def content_cache(cache: IndexCache) -> IndexCache:
    """A cache for another tree sharing ``cache``'s results by content, not its path stats."""
    return IndexCache(
        stats={}, names=cache.names, facts=cache.facts, inferred=cache.inferred, trees=cache.trees
    )


def check_tree(
    root: Path,
    base_root: Path,
    cache: IndexCache | None = None,
    *,
    changed: Sequence[str] = (),
    history: History | None = None,
) -> TreeCheck:
    """Sweep ``root`` and ``base_root`` (a materialised base, see ``fixers.check.base_tree``), each
    with its own rules; the violations ``root`` adds.

    ``changed``: the files ``root`` changed; a concrete class of theirs that lacks an abstract
    method of its base is a contract break whose migration is learned from ``history`` (where
    the failing tree's past is; default ``root``'s own) and counts as introduced when a rule is
    learned (``fixers.learned``).

    The base sweep runs without a git hook's environment (``without_hook_env``), so it is for
    single-threaded callers.
    """
    cache = cache if cache is not None else IndexCache()
    head = run_sweep(root, cache=cache)
    breaks = static_breaks(head.index, changed)
    learn_from(root, head, breaks=breaks, history=history, only=set(changed))
    with without_hook_env():
        base = run_sweep(base_root, cache=content_cache(cache)).report
    return TreeCheck(head, base, introduced(base.violations, head.report.violations))


def recheck(root: Path, before: TreeCheck, cache: IndexCache) -> TreeCheck:
    """Sweep ``root`` again with the contracts of ``before`` against the same base."""
    head = run_sweep(root, before.head.report.contracts, cache=cache)
    return TreeCheck(head, before.base, introduced(before.base.violations, head.report.violations))


def fix_introduced(
    root: Path,
    check: TreeCheck,
    cache: IndexCache,
    *,
    imports: bool = False,
    sandbox: SandboxOptions = STRICT,
    preload: Sequence[str] = DEFAULT_PRELOAD,
) -> FixOutcome:
    """Apply the codemods for ``check.introduced`` only, write what holds, and check again.

    Codemods plan edits in the violation's own file, so a file whose violations are all on the
    base is never touched. ``imports`` runs the import check of each changed module in the
    sandbox ``sandbox`` describes (target code never runs outside it).
    """
    result = fix_in_memory(root, check.head, check.introduced)
    if imports and result.changes:
        # As ``fixers.sweep.run.fix``: preload only what the files read import, the rest on demand.
        imported = {t for facts in check.head.index.facts.values() for _, t in facts.bindings}
        now = imported_of(preload, imported)
        later = [name for name in preload if name not in now]
        answers = check_imports(root, result.changes, sandbox=sandbox, preload=now, later=later)
        attach_imports(result.changes, answers)
    skipped = len(result.skips)
    written = write_changes(root, result)
    return FixOutcome(result, written, recheck(root, check, cache), result.skips[skipped:])
