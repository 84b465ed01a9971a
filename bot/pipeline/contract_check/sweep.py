"""What a PR adds to its base's contract violations: merge, sweep both trees, subtract.

The PR's head is merged onto the current base with ``git merge-tree --write-tree`` (no worktree,
no index: the merged tree exists only as objects in the mirror). The tree swept is that merge
with the base's configuration files (``.repairbot.toml``, ``pyproject.toml``) put back in place
of the PR's: a PR's own configuration takes effect after it merges, never in its own check
(``Swept.config_changed`` says when it brought one). The repository's directory
(``contract_check_tree``) is moved to the base tree and swept, unless this process swept that
base tree before, then to the merged tree and swept; both sweeps share the repository's cache,
and both moves together are charged to one ``WriteBudget``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from bot.git import git, run_git
from bot.pipeline.contract_check.blobs import changed_paths, top_entries, with_entries_of
from bot.pipeline.contract_check.tree import (
    OverBudget,
    TreeOnDisk,
    WriteBudget,
    tree_of_repository,
)
from fixers.check.introduced import introduced
from fixers.contracts.model import CONFIG_FILE, CONFIG_FILES
from fixers.learned.history import History
from fixers.learned.static_breaks import static_breaks
from fixers.sweep.outcome import FileChange
from fixers.sweep.run import Progress, fix_in_memory, learn_from, run_sweep
from fixers.sweep.violation_types import Violation

# Exit 0 and the tree; exit 1, the tree and the conflicted paths; else git's error on stderr.
MERGE_TREE = (
    "merge-tree",
    "--write-tree",
    "--name-only",
    "-z",
    "--no-messages",
    "--end-of-options",
)


@dataclass(frozen=True)
class Conflict:
    """The head does not merge cleanly onto the base."""

    paths: tuple[str, ...]


@dataclass(frozen=True)
class Unmergeable:
    """git refused the merge itself (no common history, ...)."""

    reason: str


@dataclass(frozen=True)
class TooManyFiles:
    """The PR changes more files than a check may sweep."""

    count: int
    limit: int


@dataclass(frozen=True)
class OverWriteBudget:
    """The trees would write more under the data dir than a check may."""

    reason: str


@dataclass(frozen=True)
class Swept:
    """The violations the merge adds, and the codemods' changes (on the merged tree) for them."""

    introduced: list[Violation]
    changes: list[FileChange]
    base_violations: int
    files_changed: int
    config_changed: bool = False  # the PR changes .repairbot.toml (not applied to its check)


Outcome = Conflict | Unmergeable | TooManyFiles | OverWriteBudget | Swept


def merge_tree(repo: Path, base: str, head: str) -> str | Conflict | Unmergeable:
    """The tree of ``head`` merged onto ``base`` (commits of ``repo``), or why there is none."""
    result = run_git(repo, *MERGE_TREE, base, head)
    fields = result.stdout.split(b"\0")
    if result.returncode == 0:
        return fields[0].decode()
    if result.returncode == 1 and fields[0]:
        paths = dict.fromkeys(f.decode("utf-8", "replace") for f in fields[1:] if f)
        return Conflict(tuple(paths))
    return Unmergeable(result.stderr.decode("utf-8", "replace").strip() or "git merge-tree failed")


def commit_of(repo: Path, ref: str) -> str | None:
    """The commit ``ref`` names in ``repo``, or None when it names none."""
    found = git(
        repo,
        "rev-parse",
        "--verify",
        "--quiet",
        "--end-of-options",
        f"{ref}^{{commit}}",
        check=False,
    )
    return found.strip() or None


def tree_of(repo: Path, commit: str) -> str:
    """The tree id of ``commit``."""
    return git(repo, "rev-parse", "--verify", "--end-of-options", f"{commit}^{{tree}}").strip()


def sweep_pull(
    repo: Path,
    base: str,
    head: str,
    *,
    repository: str,
    trees_dir: Path,
    max_files: int,
    budget: WriteBudget | None = None,
    progress: Progress | None = None,
) -> Outcome:
    """The violations ``head`` merged onto ``base`` adds to ``base``'s (commits of ``repo``).

    ``repository`` (``owner/name``) names the tree on disk under ``trees_dir`` and the cache;
    ``budget``: what the check may write there; ``progress`` is the sweep's, called during each
    sweep.
    """
    merged = merge_tree(repo, base, head)
    if not isinstance(merged, str):
        return merged
    base_tree = tree_of(repo, base)
    paths = changed_paths(repo, base_tree, merged)
    files_changed = len(paths)
    if files_changed > max_files:
        return TooManyFiles(files_changed, max_files)
    checked = with_entries_of(repo, merged, base_tree, CONFIG_FILES)
    own = frozenset({CONFIG_FILE})
    config_changed = top_entries(repo, merged, own) != top_entries(repo, base_tree, own)
    try:
        with tree_of_repository(trees_dir, repository) as on_disk:
            pull = _Pull(History(repo, base), paths)
            swept = _sweep_both(repo, on_disk, base_tree, checked, pull, budget, progress)
    except OverBudget as exc:
        return OverWriteBudget(str(exc))
    return replace(swept, config_changed=config_changed)


@dataclass(frozen=True)
class _Pull:
    """What the merged tree's sweep needs of the PR: the base's history (learned migrations are
    learned from the base branch's commits, never the PR's) and the paths the PR changes."""

    history: History
    paths: list[str]


def _sweep_both(
    repo: Path,
    on_disk: TreeOnDisk,
    base_tree: str,
    merged_tree: str,
    pull: _Pull,
    budget: WriteBudget | None,
    progress: Progress | None,
) -> Swept:
    before = on_disk.state.base_result(base_tree)
    if before is None:
        on_disk.move_to(repo, base_tree, budget)
        before = run_sweep(on_disk.root, cache=on_disk.cache, progress=progress).report.violations
        on_disk.state.remember_base(base_tree, before)
    on_disk.move_to(repo, merged_tree, budget)
    after = run_sweep(on_disk.root, cache=on_disk.cache, progress=progress)
    # A subclass the PR adds (or edits) against a contract the base changed since: learned.
    python = [p for p in pull.paths if p.endswith(".py")]
    breaks = static_breaks(after.index, python)
    learn_from(on_disk.root, after, breaks=breaks, history=pull.history, only=set(python))
    added = introduced(before, after.report.violations)
    changes = fix_in_memory(on_disk.root, after, added).changes if added else []
    return Swept(added, changes, len(before), len(pull.paths))
