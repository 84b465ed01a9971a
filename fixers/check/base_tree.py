"""The base of a check: which commit, and its Python files on disk for a sweep.

The tree at a base commit is materialised without running anything from it: a throwaway
repository borrows the real one's objects (``objects/info/alternates``), reads the commit into
its own index and checks out only the ``*.py`` files. No hook runs (``read-tree`` and
``checkout-index`` have none), no filter driver runs (the throwaway repository reads neither the
user's nor the system's git config), the real repository's index and work tree are never
written, and git itself refuses tree entries such as ``../x.py`` or ``.git/...``. The throwaway
repository has an index, so the sweep lists the base's files with ``git ls-files`` exactly as it
lists the working tree's.

Refs come from the command line or CI, so every one goes after ``--end-of-options``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT_S = 120
DEFAULT_BRANCHES = ("main", "master")
# What a git hook's environment may carry that points git at another repository or index
# (``git commit`` runs pre-commit hooks with GIT_INDEX_FILE set): never inherited by a command
# meant for the throwaway repository.
HOOK_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)


class GitTreeError(RuntimeError):
    """A git question had no answer: the message says which, in git's own words."""


@dataclass(frozen=True)
class WorkTree:
    """A directory inside a git work tree: the top of that tree and the directory below it."""

    top: Path
    prefix: str  # "" at the top, else "sub/dir/" as ``git rev-parse --show-prefix`` gives it


def _git(
    cwd: Path, *args: str, env: Mapping[str, str] | None = None, stdin: bytes | None = None
) -> bytes:
    """``git -C cwd args...``: stdout, or GitTreeError with git's message."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(cwd), *args],
            input=stdin,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            env=dict(env) if env is not None else {**os.environ, "LC_ALL": "C"},
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise GitTreeError(f"git {args[0]} did not run: {exc}") from exc
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip() or f"exit {proc.returncode}"
        raise GitTreeError(f"git {args[0]}: {message}")
    return proc.stdout


def _isolated_env() -> dict[str, str]:
    """The environment for the throwaway repository: no hook variables, no user config."""
    env = {k: v for k, v in os.environ.items() if k not in HOOK_ENV}
    env.update(
        LC_ALL="C", GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0"
    )
    return env


def git_isolated(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    """``git -C cwd args...`` reading no user or system config and no hook variables: for
    questions asked of a repository under repair (its history, its blobs)."""
    return _git(cwd, *args, env=_isolated_env(), stdin=stdin)


def work_tree(path: Path) -> WorkTree:
    """The git work tree ``path`` is in, or GitTreeError when it is in none."""
    if not path.is_dir():
        raise GitTreeError(f"{path} is not a directory")
    try:
        inside = _git(path, "rev-parse", "--is-inside-work-tree").strip()
    except GitTreeError as exc:
        raise GitTreeError(f"{path} is not inside a git work tree ({exc})") from exc
    if inside != b"true":
        raise GitTreeError(f"{path} is not inside a git work tree")
    top = _git(path, "rev-parse", "--show-toplevel").decode("utf-8", "surrogateescape").strip()
    prefix = _git(path, "rev-parse", "--show-prefix").decode("utf-8", "surrogateescape").strip()
    return WorkTree(Path(top), prefix)


def changed_python_files(tree: WorkTree, commit: str) -> list[str]:
    """The ``*.py`` files of ``tree`` that differ from ``commit`` (staged, unstaged or untracked,
    renames and deletions aside), relative to the tree's directory."""
    env = _isolated_env()
    diff = _git(tree.top, "diff", "--no-ext-diff", "--no-textconv", "--name-only", "-z",
                "--diff-filter=AMR", "--end-of-options", commit, "--", "*.py", env=env)  # fmt: skip
    new = _git(tree.top, "ls-files", "-z", "--others", "--exclude-standard", "--", "*.py", env=env)
    paths = {p.decode("utf-8", "surrogateescape") for p in (*diff.split(b"\0"), *new.split(b"\0"))}
    return sorted(p[len(tree.prefix) :] for p in paths if p and p.startswith(tree.prefix))


def resolve_commit(top: Path, ref: str) -> str:
    """The full SHA of the commit ``ref`` names, or GitTreeError."""
    try:
        out = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    except GitTreeError as exc:
        raise GitTreeError(f"{ref!r} does not name a commit") from exc
    return out.decode("ascii").strip()


def _default_branch(top: Path) -> str:
    """``origin/HEAD``'s branch, else the first of main and master that resolves."""
    candidates = list(DEFAULT_BRANCHES)
    try:
        remote = _git(top, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
        candidates.insert(0, remote.decode("utf-8", "replace").strip())
    except GitTreeError:
        pass  # no remote named origin, or its HEAD is not known here
    for name in candidates:
        try:
            resolve_commit(top, name)
        except GitTreeError:
            continue
        return name
    raise GitTreeError(
        "no default branch to compare with: origin/HEAD, main and master do not resolve "
        "(pass --base REF)"
    )


def default_base(top: Path) -> tuple[str, str]:
    """The merge base of HEAD with the default branch: ``(sha, how it was chosen)``."""
    branch = _default_branch(top)
    try:
        head = resolve_commit(top, "HEAD")
    except GitTreeError as exc:
        raise GitTreeError("HEAD has no commit yet (pass --base REF)") from exc
    try:
        base = _git(top, "merge-base", "--end-of-options", head, branch).decode("ascii").strip()
    except GitTreeError as exc:
        raise GitTreeError(f"HEAD and {branch} share no history (pass --base REF)") from exc
    return base, f"merge base of HEAD and {branch}"


@contextmanager
def materialised(tree: WorkTree, commit: str, also: Sequence[str] = ()) -> Iterator[Path]:
    """The ``*.py`` files of ``commit`` in a temporary directory, removed afterwards; ``also``:
    files at the top of ``tree``'s directory checked out too (the rules a sweep reads there).

    Yields the directory that corresponds to ``tree`` (its prefix below a temporary top named
    like ``tree.top``, so module names come out the same; it exists, empty, when the commit has
    no such directory).
    """
    common = _git(tree.top, "rev-parse", "--path-format=absolute", "--git-common-dir")
    objects = Path(common.decode("utf-8", "surrogateescape").strip()) / "objects"
    scratch = Path(tempfile.mkdtemp(prefix="repairbot-base-"))
    try:
        # Named like the real top: a top-level __init__.py makes that name a module prefix.
        top = scratch / (tree.top.name or "tree")
        env = _isolated_env()
        _git(scratch, "init", "--quiet", "--template=", str(top), env=env)
        alternates = top / ".git" / "objects" / "info" / "alternates"
        alternates.parent.mkdir(parents=True, exist_ok=True)
        alternates.write_text(f"{objects}\n", encoding="utf-8")
        _git(top, "read-tree", "--end-of-options", commit, env=env)
        extra = [f":(literal){tree.prefix}{name}" for name in also]
        listing = _git(top, "ls-files", "-z", "--", "*.py", *extra, env=env)
        if listing:
            _git(top, "checkout-index", "--force", "-z", "--stdin", env=env, stdin=listing)
        root = top / tree.prefix if tree.prefix else top
        root.mkdir(parents=True, exist_ok=True)
        yield root
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def without_hook_env() -> Iterator[None]:
    """``os.environ`` without :data:`HOOK_ENV` for the duration (restored afterwards).

    The sweep lists a tree's files with ``git ls-files`` in the process environment; inside a
    git hook that environment names the real repository's index, which a sweep of the base must
    not read. For single-threaded callers (the command line).
    """
    saved = {k: os.environ.pop(k) for k in HOOK_ENV if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)
