"""Running untrusted test code: own process group, timeout, resource limits, no secrets.

When bubblewrap (`bwrap`) is installed the command also runs in a mount namespace where the
whole filesystem is read-only except its own run directory, so a test that writes elsewhere
fails with "Read-only file system" instead of touching the host. The result says which isolation
was in force.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

POLL_S = 0.25
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


@dataclass(frozen=True)
class Limits:
    """Resource limits for one command."""

    timeout_s: float = 1800.0
    max_file_bytes: int = 2 << 30
    max_open_files: int = 4096
    max_memory_bytes: int | None = None


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
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra or {})
    return env


def _limit(limits: Limits) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.max_file_bytes, limits.max_file_bytes))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.max_open_files, limits.max_open_files))
        if limits.max_memory_bytes:
            resource.setrlimit(
                resource.RLIMIT_AS, (limits.max_memory_bytes, limits.max_memory_bytes)
            )

    return apply


def _wrap(command: Sequence[str], run_dir: Path, cwd: Path) -> tuple[list[str], str]:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return list(
            command
        ), "process group, rlimits, clean env (no filesystem sandbox: bwrap missing)"
    wrapped = [
        bwrap,
        "--ro-bind",
        "/",
        "/",
        "--dev-bind",
        "/dev",
        "/dev",
        "--proc",
        "/proc",
        "--bind",
        str(run_dir),
        str(run_dir),
        "--unshare-pid",
        "--die-with-parent",
        "--chdir",
        str(cwd),
        "--",
        *command,
    ]
    return (
        wrapped,
        "bubblewrap (read-only filesystem except the run dir), process group, rlimits, clean env",
    )


def run_isolated(
    command: Sequence[str],
    *,
    cwd: Path,
    run_dir: Path,
    log_path: Path,
    limits: Limits,
    env: Mapping[str, str] | None = None,
    should_cancel: Callable[[], bool] = lambda: False,
) -> SandboxResult:
    """Run ``command`` in ``cwd`` (inside ``run_dir``), output appended to ``log_path``."""
    argv, isolation = _wrap(command, run_dir, cwd)
    began = time.monotonic()
    with log_path.open("ab") as log:
        log.write(f"$ {' '.join(command)}\n".encode())
        log.flush()
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env or clean_environment(run_dir)),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_limit(limits),
        )
        timed_out = cancelled = False
        while process.poll() is None:
            if time.monotonic() - began > limits.timeout_s:
                timed_out = True
            elif should_cancel():
                cancelled = True
            if timed_out or cancelled:
                _kill_group(process)
                break
            time.sleep(POLL_S)
        returncode = process.wait()
    return SandboxResult(
        None if (timed_out or cancelled) else returncode,
        timed_out,
        cancelled,
        time.monotonic() - began,
        isolation,
        log_path,
    )


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the whole process group, then SIGKILL what is left after a grace period."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # stragglers that ignored SIGTERM
