"""Which files of a git tree the sweep reads, and streaming their blobs out of the repository.

Only what the sweep reads is ever written out: the Python files a directory walk lists
(``fixers.repo.files``) and the root's ``.repairbot.toml`` and ``pyproject.toml``. Symlinks and
submodules never are (a link in a tree under repair could point anywhere). Blobs come from one
``git cat-file --batch`` per batch; nothing from the tree runs (no checkout, no filter driver).
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

from bot.git import GitError, run_git
from fixers.contracts.model import CONFIG_FILES
from fixers.repo.files import SKIP_DIRS
from fixers.repo.paths import name_problem

REGULAR_MODES = frozenset({b"100644", b"100755"})
_CHUNK = 1 << 20
_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


def is_swept(path: str) -> bool:
    """Whether the sweep of a tree reads ``path`` (git's ``/``-separated path from the root).

    >>> [is_swept(p) for p in ("a/b.py", ".github/x.py", "build/x.py", "pyproject.toml")]
    [True, False, False, True]
    """
    if path in CONFIG_FILES:
        return True
    if name_problem(path) is not None:  # never written out, so never shown or swept
        return False
    parts = path.split("/")
    if not path.endswith(".py") or any(p in ("", ".", "..") for p in parts):
        return False
    return not any(d.startswith(".") or d in SKIP_DIRS for d in parts[:-1])


def _run(repo: Path, *args: str) -> bytes:
    result = run_git(repo, *args)
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git {args[0]} failed in {repo}: {message}")
    return result.stdout


def _path(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def swept_blobs(repo: Path, tree: str) -> dict[str, str]:
    """``{path: blob id}`` of the regular files of ``tree`` that the sweep reads."""
    out = _run(repo, "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", tree)
    blobs: dict[str, str] = {}
    for record in out.split(b"\0"):
        meta, _, raw = record.partition(b"\t")
        fields = meta.split()
        if len(fields) == 3 and fields[0] in REGULAR_MODES and is_swept(path := _path(raw)):
            blobs[path] = fields[2].decode()
    return blobs


def changed_paths(repo: Path, old: str, new: str) -> list[str]:
    """Every path that differs between trees ``old`` and ``new`` (swept or not)."""
    out = _run(repo, "diff-tree", "-r", "-z", "--no-renames", "--name-only", old, new)
    return [_path(raw) for raw in out.split(b"\0") if raw]


def changed_blobs(repo: Path, old: str, new: str) -> dict[str, str | None]:
    """``{path: blob id in new, or None when gone}`` for the swept paths that differ."""
    out = _run(repo, "diff-tree", "-r", "-z", "--no-renames", old, new)
    records = out.split(b"\0")
    changed: dict[str, str | None] = {}
    for meta, raw in zip(records[0::2], records[1::2], strict=False):
        fields = meta.lstrip(b":").split()
        if len(fields) != 5 or not is_swept(path := _path(raw)):
            continue
        changed[path] = fields[3].decode() if fields[1] in REGULAR_MODES else None
    return changed


def blob_sizes(repo: Path, blobs: list[str]) -> dict[str, int]:
    """``{blob id: size}`` from one ``git cat-file --batch-check`` (a missing blob is an error)."""
    if not blobs:
        return {}
    wanted = sorted(set(blobs))
    result = run_git(repo, "cat-file", "--batch-check", stdin="\n".join(wanted).encode() + b"\n")
    sizes: dict[str, int] = {}
    for line in result.stdout.decode("ascii", "replace").splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] == "blob" and fields[2].isdigit():
            sizes[fields[0]] = int(fields[2])
    missing = [blob for blob in wanted if blob not in sizes]
    if result.returncode != 0 or missing:
        raise GitError(f"git cat-file --batch-check: no blob {missing[:1] or result.returncode}")
    return sizes


def top_entries(repo: Path, tree: str, names: frozenset[str]) -> dict[str, bytes]:
    """The raw ``ls-tree -z`` records of ``tree``'s top-level entries named ``names``."""
    out = _run(repo, "ls-tree", "-z", "--end-of-options", tree)
    found = {}
    for record in out.split(b"\0"):
        _meta, _, raw = record.partition(b"\t")
        if raw and _path(raw) in names:
            found[_path(raw)] = record
    return found


def with_entries_of(repo: Path, tree: str, source: str, names: frozenset[str]) -> str:
    """``tree`` with its top-level entries ``names`` replaced by ``source``'s (removed where
    ``source`` has none): a tree object written into ``repo`` (``git mktree``)."""
    out = _run(repo, "ls-tree", "-z", "--end-of-options", tree)
    kept = [r for r in out.split(b"\0") if r and _path(r.partition(b"\t")[2]) not in names]
    records = kept + list(top_entries(repo, source, names).values())
    made = run_git(repo, "mktree", "-z", stdin=b"".join(r + b"\0" for r in records))
    if made.returncode != 0:
        raise GitError(f"git mktree failed in {repo}: {made.stderr.decode(errors='replace')}")
    return made.stdout.decode().strip()


def read_size(stream: IO[bytes], blob: str) -> int:
    """The size in the header ``git cat-file --batch`` writes before a blob's bytes."""
    header = stream.readline()
    fields = header.split()
    if len(fields) != 3 or fields[1] != b"blob":
        raise GitError(f"git cat-file: no blob {blob} ({header.decode(errors='replace').strip()})")
    return int(fields[2])


def skip_bytes(stream: IO[bytes], size: int) -> None:
    """Read ``size`` bytes from ``stream`` without keeping them (a blob too large to write)."""
    while size > 0:
        chunk = stream.read(min(size, _CHUNK))
        if not chunk:
            raise GitError("git cat-file: the stream ended inside an object")
        size -= len(chunk)
