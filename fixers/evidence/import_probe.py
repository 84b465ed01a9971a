"""Run in the sandbox by ``fixers.evidence.import_check``: one warm interpreter that import-checks
modules whose new source is given, each module in a child of its own.

Usage: ``import_probe.py ANSWER_FD [--sandboxed] [--preload NAME]... [--later NAME]...``. First
it imports the ``--preload`` packages (heavy third-party ones such as ``torch``, from the
interpreter's own paths: the repository is not on ``sys.path`` yet and no target code has run);
a ``--later`` package is preloaded the same way once a child reports that its import loaded it,
so only the first module pays for it. Then it reads one request from stdin until EOF:
``{"path": [import roots], "modules": {"pkg.mod": [path, source]}, "timeout_s": seconds per
module}``, the roots going first on ``sys.path``.

Each module is imported in a forked child, so one module's import side effects (``sys.modules``,
monkeypatching, globals, threads) never reach the next module's check; a preloaded module that the
repository shadows is dropped first (a lookup in the roots: no target code runs in this
process), so the repository's own copy is the one imported. After each child, whatever it left
running is killed (with ``--sandboxed``: every other process of the sandbox's pid namespace) and
the temporary folders are emptied.

Answers go to ANSWER_FD as JSON lines, written by this process only: ``["started"]`` first,
``["checking", module]`` before a child starts, ``["answer", module, status, detail]`` after it
(status ``ok``, ``failed`` or ``unverified``). A child closes ANSWER_FD before it runs target
code, and this process is not dumpable, so the child cannot reach the descriptor through
``/proc`` either; a module that prints at import only writes to the log. Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

ANSWER_LIMIT = 64 << 10  # bytes a child may send back; more is garbage
DETAIL_CHARS = 2000
DEFAULT_TIMEOUT_S = 60.0
POLL_S = 0.02  # how often a child's exit is looked for where the kernel has no pidfds
_PR_SET_DUMPABLE = 4
PRELOADED: set[str] = set()  # top-level names the preloads imported
LATER: list[str] = []  # packages preloaded once a child has needed one (``--later``)


class _Overlay(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the proposed source for changed modules; every other module imports normally."""

    def __init__(self, modules: dict[str, tuple[str, str]]) -> None:
        self.modules = modules

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
        /,
    ) -> ModuleSpec | None:
        if fullname not in self.modules:
            return None
        filename = self.modules[fullname][0]
        is_pkg = filename.endswith("__init__.py")
        spec = importlib.util.spec_from_loader(fullname, self, origin=filename, is_package=is_pkg)
        if spec is not None and is_pkg:
            spec.submodule_search_locations = [filename.rsplit("/", 1)[0]]
        return spec

    def exec_module(self, module: ModuleType) -> None:
        filename, source = self.modules[module.__name__]
        module.__file__ = filename
        exec(compile(source, filename, "exec"), module.__dict__)


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"[:DETAIL_CHARS]
    except Exception:  # a hostile __str__
        return f"{type(exc).__name__}: (unprintable)"


def _classify(exc: BaseException, changed: set[str]) -> tuple[str, str]:
    frames = traceback.extract_tb(exc.__traceback__)
    where = frames[-1].filename if frames else ""
    detail = _describe(exc)
    if isinstance(exc, ImportError) and not (
        isinstance(exc, ModuleNotFoundError) and exc.name in changed
    ):
        return "unverified", f"a dependency did not import: {detail}"
    if where in changed or isinstance(exc, SyntaxError):
        return "failed", detail
    return "unverified", f"a dependency failed: {detail}"


def _set_dumpable(flag: int) -> None:
    """``prctl(PR_SET_DUMPABLE)``; best effort (a libc without ``prctl``)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, flag, 0, 0, 0)


def _preload(names: Sequence[str]) -> set[str]:
    """Import ``names``; returns the top-level names of every module that brought in."""
    before = set(sys.modules)
    for name in names:
        with contextlib.suppress(BaseException):  # a package that cannot import is just not warm
            importlib.import_module(name)
    return {name.partition(".")[0] for name in set(sys.modules) - before}


def _forget_shadowed(preloaded: set[str], roots: Sequence[str]) -> None:
    """Drop preloaded packages (and their submodules) that the roots provide too: the
    repository's own copy is the one its code would import."""
    shadowed = set()
    for top in preloaded:
        spec = importlib.machinery.PathFinder.find_spec(top, list(roots))
        if spec is not None and spec.loader is not None:  # not a namespace portion: it wins
            shadowed.add(top)
    for name in [n for n in sys.modules if n.partition(".")[0] in shadowed]:
        del sys.modules[name]


def _import_in_child(name: str, request: dict[str, Any], answer_fd: int, out: int) -> None:
    """The child: cut the server's channels, import ``name``, write the answer to ``out``."""
    os.setpgid(0, 0)
    os.close(answer_fd)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    _set_dumpable(1)
    roots = [str(entry) for entry in request.get("path", []) if isinstance(entry, str)]
    raw = request.get("modules", {})
    modules = {k: (v[0], v[1]) for k, v in raw.items()} if isinstance(raw, dict) else {}
    sys.path[:0] = roots
    sys.meta_path.insert(0, _Overlay(modules))
    try:
        importlib.import_module(name)
        result = ("ok", "")
    except BaseException as exc:  # report everything, including SystemExit from the module
        result = _classify(exc, {path for path, _ in modules.values()})
    loaded = [later for later in LATER if later in sys.modules]
    # On a line of its own, even after a line the module left open on this descriptor.
    os.write(out, ("\n" + json.dumps([*result, loaded]) + "\n").encode())


def _fork_child(name: str, request: dict[str, Any], answer_fd: int) -> tuple[int, int]:
    """Fork the child that checks ``name``; returns its pid and the read end of its answer."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            _import_in_child(name, request, answer_fd, write_end)
        finally:
            os._exit(0)
    os.close(write_end)
    return pid, read_end


def _exited(pid: int) -> int:
    """A descriptor that becomes readable when ``pid`` exits (leaving it unreaped), or -1 where
    the kernel has no pidfds (then the exit is polled for, every ``POLL_S``)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return -1


def _collect(pid: int, read_end: int, timeout_s: float) -> tuple[bytes, bool, int | None]:
    """What the child wrote until it exited (or ``timeout_s`` passed): ``(bytes, timed_out,
    wait status)``, the status None when the child is not reaped yet."""
    deadline = time.monotonic() + timeout_s
    data = b""
    exited = _exited(pid)
    watched = [read_end] + ([exited] if exited >= 0 else [])
    try:
        while (remaining := deadline - time.monotonic()) > 0:
            wait = remaining if exited >= 0 else min(remaining, POLL_S)
            ready, _, _ = select.select(watched, [], [], wait)
            if read_end in ready:
                chunk = os.read(read_end, ANSWER_LIMIT)
                data = (data + chunk)[-ANSWER_LIMIT:]
                if not chunk:
                    watched.remove(read_end)
            if exited in ready:
                return data, False, None
            if exited < 0 and (reaped := os.waitpid(pid, os.WNOHANG))[0] == pid:
                return data, False, reaped[1]
        return data, True, None
    finally:
        if exited >= 0:
            os.close(exited)


def _end_child(
    pid: int, read_end: int, sandboxed: bool, status: int | None
) -> tuple[bytes, int | None]:
    """Kill the child's group and anything else left running; its remaining output and status
    (``status`` when it was reaped already)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    if status is None:
        with contextlib.suppress(ChildProcessError):
            status = os.waitpid(pid, 0)[1]
    if sandboxed:  # in the sandbox's own pid namespace: every process but pid 1 and this one
        for _ in range(100):  # until none is left (a process that is killed cannot fork)
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                break
    os.set_blocking(read_end, False)
    rest = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(read_end, ANSWER_LIMIT):
            rest = (rest + chunk)[-ANSWER_LIMIT:]
    os.close(read_end)
    return rest, status


def _answer(data: bytes) -> tuple[list[str] | None, list[str]]:
    """The child's last well-formed line: ``[status, detail]`` and the names it loaded."""
    for line in reversed(data.decode("utf-8", errors="replace").splitlines()):
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if (
                isinstance(entry, list)
                and len(entry) == 3
                and entry[0] in ("ok", "failed", "unverified")
                and isinstance(entry[1], str)
                and isinstance(entry[2], list)
            ):
                loaded = [name for name in entry[2] if isinstance(name, str)]
                return [entry[0], entry[1][:DETAIL_CHARS]], loaded
    return None, []


def _ending(status: int | None, timed_out: bool, timeout_s: float) -> list[str]:
    """The answer for a child that gave none: how it ended."""
    if timed_out:
        return ["unverified", f"timed out after {timeout_s:.0f} s while importing (killed)"]
    if status is not None and os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        name = signal.Signals(number).name if number in signal.valid_signals() else str(number)
        return ["unverified", f"the import's process was killed by {name} before it answered"]
    code = os.waitstatus_to_exitcode(status) if status is not None else "unknown"
    return ["unverified", f"the import ended its process (exit {code}) before it answered"]


def _empty(folder: str, kept: Sequence[str]) -> None:
    """Remove what ``folder`` holds, without crossing into another file system (the view's bind
    mounts: the repository, the interpreter, the run dir inside ``/tmp``) and without removing
    ``kept`` or the folders that hold it (those are only emptied)."""
    try:
        device = os.lstat(folder).st_dev
    except OSError:
        return
    doomed: list[tuple[str, bool]] = []
    for current, dirs, files in os.walk(folder, followlinks=False):
        inside = []
        for name in dirs:
            path = os.path.join(current, name)
            with contextlib.suppress(OSError):
                if os.lstat(path).st_dev == device:
                    inside.append(name)
                    if not any(k == path or k.startswith(path + "/") for k in kept):
                        doomed.append((path, True))
        dirs[:] = inside
        doomed += [(os.path.join(current, name), False) for name in files]
    for path, is_dir in reversed(doomed):  # children before the folders that hold them
        with contextlib.suppress(OSError):
            if is_dir:
                os.rmdir(path)
            else:
                os.unlink(path)


def _scrub(sandboxed: bool) -> None:
    """Empty the temporary folders, so a module's files cannot steer the next one: the run dir's
    HOME and TMPDIR, and in the sandbox the rest of the run dir and the private ``/tmp`` and
    ``/dev/shm`` (never the host's)."""
    kept = [path for path in (os.environ.get("TMPDIR", ""), os.environ.get("HOME", "")) if path]
    folders = [*kept]
    if sandboxed:  # the run dir holds HOME and TMPDIR (its log is mounted read-only: it stays)
        folders += ["/tmp", "/dev/shm", *{os.path.dirname(path) for path in kept}]
    for folder in folders:
        _empty(folder, kept)


def check_one(
    name: str, request: dict[str, Any], answer_fd: int, sandboxed: bool
) -> tuple[list[str], list[str]]:
    """Import ``name`` in a child of its own and clean up after it: ``[status, detail]``, and
    the ``LATER`` packages the import loaded."""
    timeout = request.get("timeout_s", DEFAULT_TIMEOUT_S)
    timeout_s = float(timeout) if isinstance(timeout, int | float) else DEFAULT_TIMEOUT_S
    try:
        pid, read_end = _fork_child(name, request, answer_fd)
    except OSError as exc:  # out of processes: a previous module's fork bomb
        return ["unverified", f"could not start the import: {exc}"], []
    data, timed_out, status = _collect(pid, read_end, timeout_s)
    rest, status = _end_child(pid, read_end, sandboxed, status)
    _scrub(sandboxed)
    answer, loaded = _answer(data + rest)
    return answer or _ending(status, timed_out, timeout_s), loaded


def _send(answer_fd: int, message: list[str]) -> None:
    os.write(answer_fd, (json.dumps(message) + "\n").encode())


def _warm_up(names: Sequence[str], roots: Sequence[str]) -> None:
    """Preload ``LATER`` packages a child needed, for the children after it (the server's own
    import, from the interpreter's paths; a child's word names nothing else)."""
    wanted = [name for name in names if name in LATER]
    for name in wanted:
        LATER.remove(name)
    if wanted:
        fresh = _preload(wanted) - PRELOADED
        PRELOADED.update(fresh)
        _forget_shadowed(fresh, roots)


def main() -> None:
    """Preload, read the request, check each module, answer on ANSWER_FD."""
    parser = argparse.ArgumentParser()
    parser.add_argument("answer_fd", type=int)
    parser.add_argument("--sandboxed", action="store_true")
    parser.add_argument("--preload", action="append", default=[])
    parser.add_argument("--later", action="append", default=[])
    args = parser.parse_args()
    answer_fd = args.answer_fd
    sandboxed = args.sandboxed and os.getppid() == 1  # pid 1: bubblewrap's init
    _set_dumpable(0)
    _send(answer_fd, ["started"])  # the sandbox is set up: its folders may be moved now
    PRELOADED.update(_preload(args.preload))
    LATER.extend(name for name in args.later if name not in args.preload)
    request = json.loads(sys.stdin.buffer.read() or b"{}")
    modules = request.get("modules", {}) if isinstance(request, dict) else {}
    roots = request.get("path", []) if isinstance(request, dict) else []
    roots = [root for root in roots if isinstance(root, str)]
    _forget_shadowed(PRELOADED, roots)
    for name in modules:
        _send(answer_fd, ["checking", name])
        answer, loaded = check_one(name, request, answer_fd, sandboxed)
        _send(answer_fd, ["answer", name, *answer])
        _warm_up(loaded, roots)
    os._exit(0)  # done: tearing down a preloaded torch would only keep the service waiting


if __name__ == "__main__":
    main()
