"""The one place that starts target-repository code: ``run_isolated`` (or, for a command that
takes requests while it runs, ``start_isolated`` then ``wait_isolated``).

Every process that runs code from a repository under repair (its tests, the import server, the
device probe, a ``[verify] command``) starts here, inside bubblewrap (see ``view``), in a cgroup
of its own that bounds the whole tree (see ``cgroups``; per-process rlimits where cgroups cannot
be made, see ``limits``), with a clean environment, its own session and process group, a
timeout, cancellation and limits that stop the whole tree (see ``watch``). When bubblewrap
cannot run, target code does not run either — unless the caller allows it explicitly
(development only), and then the result's ``isolation`` says so.
``tests/test_process_launch_sites.py`` fails if anything else starts a process.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

from fixers.sandbox.capabilities import NO_DAC_OVERRIDE, has_dac_override
from fixers.sandbox.cgroups import TreeGroup, TreeLimitsUnavailable, Usage, own_group
from fixers.sandbox.environment import clean_environment
from fixers.sandbox.limits import LimitHit, Limits, narrowed, preexec, tree_isolation
from fixers.sandbox.run_dirs import hand_over
from fixers.sandbox.view import (
    SANDBOX_UID,
    STRICT,
    SandboxOptions,
    View,
    gpu_devices,
    host_driver_libraries,
    inner_argv,
    interpreter_roots,
    outer_argv,
)
from fixers.sandbox.watch import Watch, hits_of, kill_group, log_lines, wait_for

SELF_TEST_TIMEOUT_S = 60.0
SANDBOXED = (
    "bubblewrap (no network, no capabilities, own user/pid/ipc/uts/cgroup namespaces, "
    "private /dev /proc /tmp, read-only interpreter, only the run dir writable{user}), "
    "process group, clean env"
)


class SandboxUnavailable(RuntimeError):
    """Target code was not run: the sandbox cannot start and running unconfined is not allowed."""


@dataclass(frozen=True)
class SandboxResult:
    """How a command ended."""

    returncode: int | None
    timed_out: bool
    cancelled: bool
    seconds: float
    isolation: str
    log_path: Path
    hits: tuple[LimitHit, ...] = ()  # the limits it reached, what stopped it first
    stray_processes: int = 0  # still running in its cgroup when it ended (then killed)

    @property
    def limit(self) -> str | None:
        """The limit that stopped it (``limits.MEMORY`` ...), or None."""
        return self.hits[0].name if self.hits else None


def _tools() -> tuple[str | None, str | None]:
    return shutil.which("bwrap"), shutil.which("setpriv")


def _as_root() -> bool:
    return os.geteuid() == 0


def _argv(command: Sequence[str], view: View) -> tuple[list[str], str]:
    """The full command line and its isolation summary; raises SandboxUnavailable."""
    bwrap, setpriv = _tools()
    if bwrap is None:
        raise SandboxUnavailable("bwrap is not installed (Debian package: bubblewrap)")
    inner = inner_argv(bwrap, command, view)
    if not _as_root():
        return inner, SANDBOXED.format(user="")
    if setpriv is None:
        raise SandboxUnavailable("running as root needs setpriv (util-linux) to drop to a user")
    outer = outer_argv(bwrap, setpriv, view, SANDBOX_UID, SANDBOX_UID)
    return [*outer, *inner], SANDBOXED.format(user=f", as uid {SANDBOX_UID}, not root")


def build_view(*, cwd: Path, run_dir: Path, log_path: Path, options: SandboxOptions) -> View:
    """The view for one command: run dir writable; interpreters and ``options.readonly`` not.

    ``command`` only names what runs: it never adds a path to the view.
    """
    devices = gpu_devices() if options.gpu_devices else ()
    image = options.system_root.resolve() if options.system_root is not None else None
    readonly = [*interpreter_roots(options.interpreters), *options.readonly]
    return View(
        cwd=cwd.resolve(),
        writable=(run_dir.resolve(),),
        readonly=tuple(p.resolve() for p in readonly if p.exists()),
        protected=(log_path.resolve(),),
        hidden=tuple(p.resolve() for p in options.hidden),
        devices=devices,
        system=(Path("/sys"),) if devices else (),  # CUDA reads the PCI topology
        image=image,
        driver_libs=host_driver_libraries() if devices and image is not None else (),
    )


@functools.cache
def _self_test(bwrap: str | None, setpriv: str | None, root: bool) -> str | None:
    """Why the sandbox cannot start on this host (``None`` when it can); checked once."""
    if bwrap is None:
        return "bwrap is not installed (Debian package: bubblewrap)"
    if root and setpriv is None:
        return "running as root needs setpriv (util-linux) to drop to an unprivileged user"
    if root and not has_dac_override():  # root could not read back nor remove run dirs
        return NO_DAC_OVERRIDE
    with tempfile.TemporaryDirectory(prefix="repairbot-sandbox-check-") as folder:
        run_dir = Path(folder)
        log_path = run_dir / "check.log"
        view = build_view(
            cwd=run_dir,
            run_dir=run_dir,
            log_path=log_path,
            options=SandboxOptions(gpu_devices=False),
        )
        argv, _ = _argv(["/usr/bin/true"], view)
        limits = Limits(timeout_s=SELF_TEST_TIMEOUT_S)
        process = _spawn(["/usr/bin/true"], argv, view, log_path, limits)
        returncode, _, _ = wait_for(process, time.monotonic(), limits.timeout_s, lambda: False)
        if returncode == 0:
            return None
        last = log_path.read_text(errors="replace").strip().splitlines()[-1:]
        return f"bubblewrap does not start here: {''.join(last) or f'exit {returncode}'}"


def sandbox_problem() -> str | None:
    """Why target code cannot be sandboxed on this host, or ``None`` when it can."""
    bwrap, setpriv = _tools()
    return _self_test(bwrap, setpriv, _as_root())


@functools.cache
def tree_limits_problem(cgroup_root: Path) -> str | None:
    """Why commands cannot run in cgroups of their own under ``cgroup_root`` (``None`` when they
    can: a process was started in one); checked once. Target code then still runs, bounded by
    per-process rlimits, and its result's ``isolation`` says why."""
    try:
        group = own_group(cgroup_root, Limits(max_memory_bytes=64 << 20, max_processes=16))
    except TreeLimitsUnavailable as exc:
        return str(exc)
    try:
        with tempfile.TemporaryDirectory(prefix="repairbot-cgroup-check-") as folder:
            log_path = Path(folder) / "check.log"
            process = _spawn(["true"], ["/usr/bin/true"], None, log_path, Limits(), group=group)
            returncode = process.wait(timeout=SELF_TEST_TIMEOUT_S)
        return None if returncode == 0 else f"a process in a new cgroup exited {returncode}"
    except (OSError, subprocess.SubprocessError) as exc:  # joining it failed in the child
        return f"cannot start a process in a new cgroup: {exc}"
    finally:
        group.kill_all()
        group.remove()


def _tree(options: SandboxOptions, limits: Limits, gpu: bool) -> tuple[TreeGroup | None, str]:
    """The command's cgroup (None where there can be none) and what bounds its tree, in words."""
    problem = tree_limits_problem(options.cgroup_root)
    if problem is None:
        try:
            group = own_group(options.cgroup_root, limits)
            return group, tree_isolation(limits, group.version)
        except TreeLimitsUnavailable as exc:
            problem = str(exc)
    return None, tree_isolation(limits, None, problem, gpu=gpu)


def _open_log(log_path: Path) -> BinaryIO:
    """Append to the log without following a symlink a target may have put in its place."""
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    return os.fdopen(fd, "ab")


@dataclass
class Running:
    """A target command started by ``start_isolated`` and not yet waited for."""

    process: subprocess.Popen[bytes]
    isolation: str
    log_path: Path
    began: float
    limits: Limits
    group: TreeGroup | None = None
    watch: Watch | None = None

    @property
    def stdin(self) -> IO[bytes] | None:
        """A pipe to the command's standard input when it was started with ``stdin=True``."""
        return self.process.stdin


def _spawn(
    command: Sequence[str],
    argv: Sequence[str],
    view: View | None,
    log_path: Path,
    limits: Limits,
    env: Mapping[str, str] | None = None,
    cwd: Path = Path("/"),
    *,
    stdin: bool = False,
    pass_fds: Sequence[int] = (),
    group: TreeGroup | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own session (and ``group``) with ``limits``, its output appended
    to the log.

    The only ``Popen`` of target code; ``view`` is None when it runs unconfined (then ``cwd``
    matters; bubblewrap changes directory itself).
    """
    enter = group.open_procs() if group is not None else []
    with contextlib.ExitStack() as closing, _open_log(log_path) as log:
        for fd in enter:
            closing.callback(os.close, fd)
        log.write(f"$ {' '.join(command)}\n".encode())
        log.flush()
        if view is not None and _as_root():
            hand_over(view.writable, keep=view.protected, uid=SANDBOX_UID)
        return subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env or {}),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
            preexec_fn=preexec(limits, gpu=bool(view and view.devices), enter=enter),
        )


def _prepare(
    command: Sequence[str], cwd: Path, run_dir: Path, log_path: Path, options: SandboxOptions
) -> tuple[list[str], View | None, str]:
    """The command line, view and isolation summary for one command (see ``run_isolated``)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    problem = sandbox_problem()
    if problem is None:
        view = build_view(cwd=cwd, run_dir=run_dir, log_path=log_path, options=options)
        argv, isolation = _argv(command, view)
        return argv, view, isolation
    if not options.allow_unsandboxed:
        raise SandboxUnavailable(f"target code not run: {problem}")
    isolation = (
        f"NOT SANDBOXED ({problem}; allowed explicitly, for development only): "
        "target code ran with the service's user and filesystem; "
        "rlimits, process group, clean env"
    )
    return list(command), None, isolation


def run_isolated(
    command: Sequence[str],
    *,
    cwd: Path,
    run_dir: Path,
    log_path: Path,
    limits: Limits,
    env: Mapping[str, str] | None = None,
    options: SandboxOptions = STRICT,
    should_cancel: Callable[[], bool] = lambda: False,
) -> SandboxResult:
    """Run target code ``command`` in ``cwd`` (inside ``run_dir``), output appended to ``log_path``.

    Raises ``SandboxUnavailable`` when bubblewrap cannot run here and ``options`` does not allow
    running unconfined; then nothing was started.
    """
    running = start_isolated(
        command,
        cwd=cwd,
        run_dir=run_dir,
        log_path=log_path,
        limits=limits,
        env=env,
        options=options,
    )
    return wait_isolated(running, timeout_s=limits.timeout_s, should_cancel=should_cancel)


def start_isolated(
    command: Sequence[str],
    *,
    cwd: Path,
    run_dir: Path,
    log_path: Path,
    limits: Limits,
    env: Mapping[str, str] | None = None,
    options: SandboxOptions = STRICT,
    stdin: bool = False,
    pass_fds: Sequence[int] = (),
) -> Running:
    """Start target code ``command`` as ``run_isolated`` does, without waiting for it.

    ``stdin`` gives it a pipe for standard input; ``pass_fds`` stay open in it (a channel that its
    own output cannot garble). Finish with ``wait_isolated`` (or ``stop_isolated``). Raises
    ``SandboxUnavailable`` as ``run_isolated`` does.
    """
    argv, view, isolation = _prepare(command, cwd, run_dir, log_path, options)
    env = dict(env or clean_environment(run_dir))
    limits = narrowed(limits, options.ceiling)
    group, tree = _tree(options, limits, gpu=bool(view and view.devices))
    watch = Watch(group, limits, run_dir.resolve())
    began = time.monotonic()
    where = cwd if view is None else Path("/")  # bubblewrap changes directory itself
    try:
        process = _spawn(
            command, argv, view, log_path, limits, env, where,
            stdin=stdin, pass_fds=pass_fds, group=group,
        )  # fmt: skip
    except BaseException:
        if group is not None:
            group.remove()
        raise
    watch.start(process)
    return Running(process, f"{isolation}; {tree}", log_path, began, limits, group, watch)


def wait_isolated(
    running: Running,
    *,
    timeout_s: float,
    should_cancel: Callable[[], bool] = lambda: False,
) -> SandboxResult:
    """Wait for a started command, at most ``timeout_s`` seconds from now (then its tree is
    killed), and say how it ended."""
    began = time.monotonic()
    returncode, timed_out, cancelled = wait_for(running.process, began, timeout_s, should_cancel)
    watched, counted, strays = _end_tree(running)
    hits = hits_of(watched, timed_out, counted, returncode, running.limits)
    if hits or strays:  # in the log too, where its output stops
        with _open_log(running.log_path) as log:
            log.write(log_lines(hits, strays).encode())
    interrupted = timed_out or cancelled
    return SandboxResult(
        None if interrupted else returncode,
        timed_out,
        cancelled,
        time.monotonic() - running.began,
        running.isolation,
        running.log_path,
        hits,
        strays,
    )


def stop_isolated(running: Running) -> None:
    """Kill a started command's whole tree now (safe to call after it ended)."""
    if running.process.poll() is None:
        kill_group(running.process)
    running.process.wait()
    _end_tree(running)
    if running.process.stdin is not None:
        with contextlib.suppress(OSError):
            running.process.stdin.close()


def _end_tree(running: Running) -> tuple[LimitHit | None, Usage | None, int]:
    """Once the command ended: stop watching, read its cgroup's counters, kill what is still in
    it (a daemon that left the process group) and remove it. Returns the watch's hit, the
    counters and how many processes were left (safe to call twice)."""
    watched = None
    if running.watch is not None:
        running.watch.stop()
        watched = running.watch.final()
    group = running.group
    if group is None:
        return watched, None, 0
    counted = group.usage()
    strays = group.kill_all()
    group.remove()
    return watched, counted, strays
