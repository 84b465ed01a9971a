"""Reading and writing a target repository's files without leaving it, and within a size cap.

A target repository is untrusted: a tracked ``pkg/link.py -> /etc/...`` symlink, or a symlinked
directory, must never make the sweep read (or a fix write) a file outside the tree, and one huge
file must not make the sweep parse gigabytes. Every read of repository content by the sweep,
the fixer and the PR text goes through ``read_repo_file``; every write through
``write_repo_file``.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from pathlib import Path

from fixers.repo.input_rules import control_character_problem

DEFAULT_MAX_FILE_BYTES = 2 << 20  # 2 MiB: larger than any hand-written module we have met


class FileRefused(ValueError):
    """A repository file the bot will not read or write; the message says why."""


def name_problem(rel: str) -> str | None:
    """Why a file name cannot be swept (None: it can): one with a control character would break
    out of every line it is shown on (a PR body, a commit message's trailers)."""
    problem = control_character_problem(rel)
    return None if problem is None else f"refused: the path {problem}"


def escape_problem(root: Path, rel: str) -> str | None:
    """Why ``root/rel`` leaves the repository once symlinks are resolved (None: it stays in)."""
    return _escape(root.resolve(), rel)


def escaping(root: Path, rels: list[str]) -> dict[str, str]:
    """The files of ``rels`` under a symlinked folder that leads outside ``root``, with the reason.

    Each folder is looked at once (``lstat``) and only paths through a linked folder are
    resolved: resolving every file of a 2,000-file tree cost the sweep more than the rest of its
    work. A file that is itself a link out is refused when it is read (``read_repo_file``).
    """
    base = root.resolve()
    prefix = os.path.join(base, "")
    linked: dict[str, bool] = {"": False}

    def through_link(folder: str) -> bool:
        if folder not in linked:
            linked[folder] = through_link(folder.rpartition("/")[0]) or os.path.islink(
                prefix + folder
            )
        return linked[folder]

    found: dict[str, str] = {}
    for rel in rels:
        folder = rel.rpartition("/")[0]
        if not linked.get(folder, True):
            continue  # a folder already known not to be reached through a link
        if through_link(folder):
            problem = _escape(base, rel)
            if problem is not None:
                found[rel] = problem
    return found


def _escape(base: Path, rel: str) -> str | None:
    target = (base / rel).resolve()
    if target == base or not target.is_relative_to(base):
        return "refused: a symlink that leads outside the repository"
    return None


@functools.lru_cache(maxsize=64)
def _real_root(root: Path) -> str:
    """``root`` resolved once, as a string (the roots are the bot's own checkouts; resolving,
    and ``Path`` arithmetic, per file cost the sweep more than reading the file)."""
    return str(root.resolve())


def read_repo_file(root: Path, rel: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """The bytes of ``root/rel``; ``FileRefused`` outside the repository or over ``max_bytes``.

    The cap is checked before reading and again while reading (the file may grow), so memory
    stays bounded by ``max_bytes`` whatever the repository holds. ``OSError`` passes through.
    """
    return read_repo_file_stat(root, rel, max_bytes)[0]


def read_repo_file_stat(
    root: Path, rel: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> tuple[bytes, os.stat_result]:
    """``read_repo_file`` and the ``fstat`` of the file it read (its size, times and inode)."""
    base = _real_root(root)
    path = rel if rel.startswith("/") else f"{base}/{rel}"  # as ``os.path.join``, faster
    fd = os.open(path, os.O_RDONLY)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):  # refused as ``open`` refuses it
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        # Where the open really landed (one readlink instead of resolving every component).
        if not _opened_inside(fd, base, rel):
            raise FileRefused("refused: a symlink that leads outside the repository")
        if not stat.S_ISREG(info.st_mode):
            # A FIFO or device in a checked-out tree would block or never end.
            raise FileRefused("refused: not a regular file")
        if info.st_size > max_bytes:
            raise FileRefused(too_large(info.st_size, max_bytes))
        data = _read_capped(fd, info.st_size, max_bytes)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise FileRefused(too_large(len(data), max_bytes))
    return data, info


def _read_capped(fd: int, size: int, max_bytes: int) -> bytes:
    """Up to ``max_bytes + 1`` bytes of ``fd`` (to its end): the first read asks for the size
    ``fstat`` gave and one byte more, so a file that did not grow costs a read and an empty one."""
    limit = max_bytes + 1
    parts = [os.read(fd, min(size + 1, limit))]
    got = len(parts[0])
    while got < limit:
        chunk = os.read(fd, min(limit - got, 1 << 16))
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _opened_inside(fd: int, base: str, rel: str) -> bool:
    try:
        opened = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc: resolve the path instead
        return _escape(Path(base), rel) is None
    return opened.startswith(base if base.endswith("/") else base + "/")


def too_large(size: int, max_bytes: int) -> str:
    """The skip reason for a file over the cap, with both sizes."""
    return (
        f"skipped: {size:,} bytes, over the {max_bytes:,}-byte cap per file "
        "(max_file_bytes in .repairbot.toml)"
    )


def write_repo_file(root: Path, rel: str, data: bytes) -> None:
    """Replace the content of ``root/rel``; ``FileRefused`` if that would write through a symlink.

    Only regular files inside the repository are written: a symlink (even one pointing inside)
    is left alone, since writing through it changes a file other than the one the fix is about.
    """
    problem = escape_problem(root, rel)
    if problem is not None:
        raise FileRefused(problem)
    path = root.resolve() / rel
    if path.is_symlink():
        raise FileRefused("refused: not written through a symlink")
    # O_NOFOLLOW: if the file became a symlink since the check, the open fails instead.
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
    with os.fdopen(fd, "wb") as stream:
        stream.write(data)
