"""The one place that starts target-repository code: ``run_isolated`` (or, for a command that
takes requests while it runs, ``start_isolated`` then ``wait_isolated``).

Every process that runs code from a repository under repair (its tests, the import server, the
device probe, a ``[verify] command``) starts here, inside bubblewrap (see ``view``) with rlimits
(see ``limits``), a clean environment, its own session and process group, a timeout and
cancellation that kill the whole tree. When bubblewrap cannot run, target code does not run
either — unless the caller allows it explicitly (development only), and then the result's
``isolation`` says so. ``tests/test_process_launch_sites.py`` fails if anything else starts a
process.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

from fixers.sandbox.capabilities import NO_DAC_OVERRIDE, has_dac_override
from fixers.sandbox.limits import Limits, preexec
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

POLL_S = 0.25
SELF_TEST_TIMEOUT_S = 60.0
_SAFE_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "TZ",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
)
SANDBOXED = (
    "bubblewrap (no network, no capabilities, own user/pid/ipc/uts/cgroup namespaces, "
    "private /dev /proc /tmp, read-only interpreter, only the run dir writable{user}), "
    "rlimits (memory, processes, CPU time, file size, no core), process group, clean env"
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


def clean_environment(run_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A minimal environment: a few safe variables, a private HOME and TMPDIR, no secrets."""
    env = {key: os.environ[key] for key in _SAFE_ENV if key in os.environ}
    home = run_dir / "home"
    tmp = run_dir / "tmp"
    home.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(parents=True, exist_ok=True)
    env.update(
        {
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "USER": "sandbox",  # no /etc/passwd inside: getpass.getuser() reads these first
            "LOGNAME": "sandbox",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra or {})
    return env


def _tools() -> tuple[str | None, str | None]:
    return shutil.which("bwrap"), shutil.which("setpriv")


def _as_root() -> bool:
    return os.geteuid() == 0


def _handoff(paths: Sequence[Path], keep: Sequence[Path]) -> None:
    """Give the writable trees to the sandbox user (as root); ``keep`` stays the service's.

    Never follows a symlink: the tree may hold links a previous target run planted.
    """
    kept = {p.resolve() for p in keep}
    for top in paths:
        for folder, dirs, files in os.walk(top, followlinks=False):
            for name in [".", *dirs, *files]:
                path = Path(folder) / name if name != "." else Path(folder)
                if path in kept:
                    continue
                info = path.lstat()
                if info.st_uid != SANDBOX_UID:
                    os.chown(path, SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)


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
        result = _wait(process, time.monotonic(), limits.timeout_s, lambda: False)
        if result[0] == 0:
            return None
        last = log_path.read_text(errors="replace").strip().splitlines()[-1:]
        return f"bubblewrap does not start here: {''.join(last) or f'exit {result[0]}'}"


def sandbox_problem() -> str | None:
    """Why target code cannot be sandboxed on this host, or ``None`` when it can."""
    bwrap, setpriv = _tools()
    return _self_test(bwrap, setpriv, _as_root())


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
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own session with ``limits``, its output appended to the log.

    The only ``Popen`` of target code; ``view`` is None when it runs unconfined (then ``cwd``
    matters; bubblewrap changes directory itself).
    """
    with _open_log(log_path) as log:
        log.write(f"$ {' '.join(command)}\n".encode())
        log.flush()
        if view is not None and _as_root():
            _handoff(view.writable, keep=view.protected)
        return subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env or {}),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
            preexec_fn=preexec(limits, gpu=bool(view and view.devices)),
        )


def _wait(
    process: subprocess.Popen[bytes],
    began: float,
    timeout_s: float,
    should_cancel: Callable[[], bool],
) -> tuple[int | None, bool, bool, float]:
    """Wait for ``process``, killing its tree on timeout or cancellation.

    Returns at once when it exits (``wait`` with a timeout, no sleep between checks);
    cancellation is checked every ``POLL_S``. Returns (returncode, timed_out, cancelled, seconds).
    """
    timed_out = cancelled = False
    while True:
        remaining = timeout_s - (time.monotonic() - began)
        if remaining <= 0:
            timed_out = True
        elif should_cancel():
            cancelled = True
        if timed_out or cancelled:
            _kill_group(process)
            break
        try:
            process.wait(timeout=min(POLL_S, remaining))
            break
        except subprocess.TimeoutExpired:
            continue
    returncode = process.wait()
    return returncode, timed_out, cancelled, time.monotonic() - began


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
    began = time.monotonic()
    where = cwd if view is None else Path("/")  # bubblewrap changes directory itself
    process = _spawn(
        command, argv, view, log_path, limits, env, where, stdin=stdin, pass_fds=pass_fds
    )
    return Running(process, isolation, log_path, began)


def wait_isolated(
    running: Running,
    *,
    timeout_s: float,
    should_cancel: Callable[[], bool] = lambda: False,
) -> SandboxResult:
    """Wait for a started command, at most ``timeout_s`` seconds from now (then its tree is
    killed), and say how it ended."""
    began = time.monotonic()
    returncode, timed_out, cancelled, _ = _wait(running.process, began, timeout_s, should_cancel)
    interrupted = timed_out or cancelled
    return SandboxResult(
        None if interrupted else returncode,
        timed_out,
        cancelled,
        time.monotonic() - running.began,
        running.isolation,
        running.log_path,
    )


def stop_isolated(running: Running) -> None:
    """Kill a started command's whole tree now (safe to call after it ended)."""
    if running.process.poll() is None:
        _kill_group(running.process)
    running.process.wait()
    if running.process.stdin is not None:
        with contextlib.suppress(OSError):
            running.process.stdin.close()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the whole process group, then SIGKILL what is left after a grace period.

    Inside bubblewrap the target is in its own pid namespace: when bubblewrap dies the kernel
    kills every process in that namespace, including ones that left the process group.
    """
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # stragglers that ignored SIGTERM
