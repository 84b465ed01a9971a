"""Provenance: which commits the bot may build on, and what a branch it pushes may hold.

The trust model (docs/security.md): only people with write access move the branches of a
repository, so a **trusted branch** is the repository's default branch or one of
``Settings.trusted_branches`` (fnmatch patterns), and never one of the bot's own namespaces
(its fix branches, and the fork namespace where ``apply-fix --confirm-fork`` puts a stranger's
commits). A commit is trusted when such a branch's tip reaches it. A fork PR's head, a PR branch
or any other commit is data: it is classified, shown and reviewed, never pushed.

Before every push the branch is checked once more: every commit it would add to the remote
(``git rev-list HEAD --not TRUSTED...``) must be one the bot made in this very operation. The
bot's git identity proves nothing (anyone can write ``repairbot <repairbot@localhost>`` into a
commit), so "made by the bot" means a SHA the caller created and hands in.

Configuration is trusted the same way: a sweep of an untrusted tree (a PR head, for
``apply-fix`` or a suggestion) runs with the base branch's configuration files pinned over the
tree's own (``trusted_config``), so a PR cannot exclude its own files or raise its own caps.
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

from bot.git import git, run_git
from fixers.contracts.model import CONFIG_FILES

# Branches the bot writes itself: never a trusted base, whatever the patterns say.
FIX_BRANCH_PREFIX = "repairbot/"
FORK_BRANCH_PREFIX = "repairbot-fork/"
_SHOWN = 5


class ProvenanceRefused(Exception):
    """A push refused because the branch would carry commits that are neither on a trusted
    branch nor made by the bot; the message names them."""


def is_trusted_branch(name: str, *, default_branch: str | None, patterns: Sequence[str]) -> bool:
    """Whether branch ``name`` may be built on: the default branch, or one matching ``patterns``
    (never one of the bot's own namespaces).

    >>> is_trusted_branch("main", default_branch="main", patterns=[])
    True
    >>> is_trusted_branch("release/1.0", default_branch="main", patterns=["release/*"])
    True
    >>> is_trusted_branch("repairbot-fork/apply-fix/3", default_branch="main", patterns=["*"])
    False
    """
    if not name or name.startswith((FIX_BRANCH_PREFIX, FORK_BRANCH_PREFIX)):
        return False
    return name == default_branch or any(fnmatch.fnmatchcase(name, p) for p in patterns)


def branch_tip(repo: Path, name: str) -> str | None:
    """The commit branch ``name`` points at in ``repo``: ``refs/heads/NAME``, else the remote's
    ``refs/remotes/origin/NAME``; never a tag, a SHA or a PR ref passing for a branch."""
    for ref in (f"refs/heads/{name}", f"refs/remotes/origin/{name}"):
        found = git(
            repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}",
            check=False,
        ).strip()  # fmt: skip
        if found:
            return found
    return None


def checked_out_branch(repo: Path) -> str | None:
    """The branch ``HEAD`` names in a local repository (None: detached, or not a repository)."""
    found = git(repo, "symbolic-ref", "--quiet", "--short", "HEAD", check=False).strip()
    return found or None


def reaches(repo: Path, tip: str, commit: str) -> bool:
    """Whether ``commit`` is ``tip`` or one of its ancestors."""
    return (
        run_git(repo, "merge-base", "--is-ancestor", "--end-of-options", commit, tip).returncode
        == 0
    )


def pulls_at(repo: Path, commit: str) -> list[int]:
    """The PRs whose head is ``commit``, from a mirror's ``refs/pull/N/head`` refs (no API call)."""
    out = git(
        repo, "for-each-ref", "--format=%(refname)", f"--points-at={commit}", "refs/pull/",
        check=False,
    )  # fmt: skip
    numbers = []
    for ref in out.split():
        parts = ref.split("/")
        if len(parts) == 4 and parts[3] == "head" and parts[2].isdigit():
            numbers.append(int(parts[2]))
    return sorted(numbers)


def foreign_commits(
    repo: Path, head: str, *, trusted: Sequence[str], made: Collection[str]
) -> list[str]:
    """The commits ``head`` would bring that no ``trusted`` tip reaches and the bot did not make."""
    excluded = [f"^{tip}" for tip in trusted if tip]
    out = git(repo, "rev-list", "--end-of-options", head, *excluded, "--")
    return [sha for sha in out.split() if sha not in made]


def _describe(repo: Path, shas: Sequence[str]) -> str:
    shown = []
    for sha in shas[:_SHOWN]:
        line = git(repo, "log", "-1", "--format=%h by %an <%ae>", "--end-of-options", sha, "--")
        shown.append(line.strip() or sha[:12])
    more = f" and {len(shas) - _SHOWN} more" if len(shas) > _SHOWN else ""
    return ", ".join(shown) + more


def check_push(
    repo: Path,
    head: str,
    *,
    trusted: Sequence[str],
    made: Collection[str],
    where: str,
) -> None:
    """Refuse (``ProvenanceRefused``) to push ``head`` to ``where`` when it carries a commit
    that is neither reached by a ``trusted`` tip nor one the bot ``made``."""
    foreign = foreign_commits(repo, head, trusted=trusted, made=made)
    if foreign:
        raise ProvenanceRefused(
            f"provenance: not pushing {head[:12]} to {where}: {len(foreign)} commit(s) are "
            f"neither on a trusted branch nor made by repairbot ({_describe(repo, foreign)})"
        )


def _regular_blob(repo: Path, commit: str, name: str) -> str | None:
    listed = run_git(repo, "ls-tree", "--end-of-options", commit, "--", name)
    entry = listed.stdout.decode("utf-8", "replace").split("\t")[0].split()
    if listed.returncode != 0 or len(entry) != 3 or entry[0] not in ("100644", "100755"):
        return None
    return entry[2]


def _place(repo: Path, worktree: Path, name: str, commit: str | None) -> None:
    """Make ``worktree/name`` what ``commit`` has there: its regular file, or nothing."""
    target = worktree / name
    if target.is_symlink() or target.exists():
        target.unlink()
    blob = _regular_blob(repo, commit, name) if commit else None
    if blob is not None:
        target.write_bytes(run_git(repo, "cat-file", "blob", blob).stdout)


@contextlib.contextmanager
def trusted_config(repo: Path, worktree: Path, trusted: str | None) -> Iterator[None]:
    """Within the block, ``worktree``'s configuration files (``CONFIG_FILES``) are ``trusted``'s
    (removed where it has none, or is None); afterwards they are the worktree ``HEAD``'s again,
    so a commit made after the block changes none of them."""
    head = git(worktree, "rev-parse", "--verify", "HEAD").strip()
    for name in sorted(CONFIG_FILES):
        _place(repo, worktree, name, trusted)
    try:
        yield
    finally:
        for name in sorted(CONFIG_FILES):
            _place(repo, worktree, name, head)
