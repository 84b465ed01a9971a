"""Where a contract changed: the commit that introduced it, found in the failing commit's history.

Questions go to git with the repository's own configuration and hooks ignored (``git_isolated``)
and with textconv and external diff drivers off: the repository is data. ``git log`` follows
every parent, so a contract commit on a branch merged later is found, and a subclass added on a
concurrent branch is just another class of the tree at HEAD. A shallow clone is deepened (when
it has a remote) up to ``max_depth`` commits, then the search gives up with a reason instead of
guessing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fixers.check.base_tree import GitTreeError, git_isolated
from fixers.learned.rule import CommitRef

DIFF_SAFETY = ("--no-textconv", "--no-ext-diff", "--no-color")
MAX_BLOB_BYTES = 2_000_000
DEEPEN_STEP = 1_000


class HistoryError(RuntimeError):
    """The contract commit could not be found; the message says why, for the report."""


@dataclass(frozen=True)
class History:
    """Where to read history: a repository (a work tree or a bare mirror) and the commit whose
    past holds the contract commit (HEAD for a checkout; the base branch's commit for a PR)."""

    top: Path
    tip: str = "HEAD"
    prefix: str = ""  # the swept tree's directory below ``top`` ("" at the top, else "sub/")


@dataclass(frozen=True)
class FileChangeRef:
    """A Python file a commit changed: its path before and after (renames followed)."""

    before: str | None
    after: str


def _text(out: bytes) -> str:
    return out.decode("utf-8", "surrogateescape")


def _records(out: bytes) -> list[CommitRef]:
    commits: list[CommitRef] = []
    for record in _text(out).split("\x1e"):
        sha, _, subject = record.strip("\n").partition("\x00")
        if sha:
            commits.append(CommitRef(sha, subject.splitlines()[0] if subject else ""))
    return commits


def commits_changing(
    top: Path,
    pattern: str,
    paths: Sequence[str] = (),
    *,
    since: str | None = None,
    tip: str = "HEAD",
    limit: int = 20,
    count_change: bool = True,
) -> list[CommitRef]:
    """Commits reachable from ``tip`` (newest first, at most ``limit``) whose diff of ``paths``
    changes how often ``pattern`` (a regular expression) occurs (``count_change``), or adds or
    removes a line matching it."""
    pickaxe = ["-S", pattern, "--pickaxe-regex"] if count_change else ["-G", pattern]
    revision = f"{since}..{tip}" if since else tip
    out = git_isolated(
        top,
        "log",
        *DIFF_SAFETY,
        f"--max-count={limit}",
        "--format=%H%x00%s%x1e",
        *pickaxe,
        "--end-of-options",
        revision,
        "--",
        *paths,
    )
    return _records(out)


def blob(top: Path, commit: str, path: str) -> bytes | None:
    """The bytes of ``path`` at ``commit`` (None when absent, binary or over the cap)."""
    try:
        size = int(_text(git_isolated(top, "cat-file", "-s", f"{commit}:{path}")).strip())
    except (GitTreeError, ValueError):
        return None
    if size > MAX_BLOB_BYTES:
        return None
    data = git_isolated(top, "cat-file", "blob", f"{commit}:{path}")
    return None if b"\0" in data[:8192] else data


def blobs(top: Path, specs: list[str]) -> dict[str, bytes | None]:
    """``blob`` for many ``commit:path`` specs in one ``git cat-file --batch``."""
    if not specs:
        return {}
    out = git_isolated(top, "cat-file", "--batch", stdin="".join(f"{s}\n" for s in specs).encode())
    found: dict[str, bytes | None] = {}
    at = 0
    for spec in specs:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) != 3 or header[1] != b"blob":
            found[spec] = None
            continue
        size = int(header[2])
        data = out[at : at + size]
        at += size + 1
        binary = b"\0" in data[:8192]
        found[spec] = None if size > MAX_BLOB_BYTES or binary else data
    return found


def parent_of(top: Path, commit: str) -> str | None:
    """The first parent of ``commit`` (None for a root commit)."""
    line = _text(git_isolated(top, "rev-list", "--parents", "-n", "1", commit)).split()
    return line[1] if len(line) > 1 else None


def changed_python_files(top: Path, commit: str, parent: str | None) -> list[FileChangeRef]:
    """The ``*.py`` files ``commit`` added or modified relative to ``parent``, renames followed."""
    if parent is None:
        return []
    out = git_isolated(
        top, "diff-tree", *DIFF_SAFETY, "-r", "-z", "-M", "--name-status", parent, commit
    )
    fields = _text(out).split("\x00")
    changes: list[FileChangeRef] = []
    i = 0
    while i < len(fields) - 1:
        status = fields[i]
        if status.startswith(("R", "C")):
            before, after, i = fields[i + 1], fields[i + 2], i + 3
        else:
            before, after, i = fields[i + 1], fields[i + 1], i + 2
        if status.startswith(("M", "R", "C")) and after.endswith(".py"):
            changes.append(FileChangeRef(before, after))
    return changes


def is_shallow(top: Path) -> bool:
    """Whether the repository is a shallow clone."""
    return _text(git_isolated(top, "rev-parse", "--is-shallow-repository")).strip() == "true"


def shallow_boundary(top: Path) -> frozenset[str]:
    """The commits a shallow clone cut its history at: their diff is their whole tree, so
    they are never the commit that changed a contract."""
    path = Path(_text(git_isolated(top, "rev-parse", "--path-format=absolute", "--git-path",
                                   "shallow")).strip())  # fmt: skip
    try:
        return frozenset(path.read_text(encoding="ascii").split())
    except (OSError, UnicodeDecodeError):
        return frozenset()


def history_depth(top: Path, tip: str = "HEAD") -> int:
    """How many commits ``tip`` reaches here."""
    return int(_text(git_isolated(top, "rev-list", "--count", tip)).strip() or 0)


def deepen(top: Path, by: int) -> bool:
    """Fetch ``by`` more commits of history from ``origin``; False when there is no origin or
    the fetch failed (the search then stops at what is here)."""
    try:
        git_isolated(top, "remote", "get-url", "origin")
        git_isolated(top, "fetch", "--quiet", f"--deepen={by}", "origin")
    except GitTreeError:
        return False
    return True
