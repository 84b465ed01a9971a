"""The service's sandbox policy: settings → ``fixers.sandbox.SandboxOptions`` and ``Limits``.

The launcher itself lives in ``fixers.sandbox`` (the import probe needs it too, and ``fixers``
never imports ``bot``); this module only says what the service's settings allow, hide and
bound, and how the sandbox stands on this host.
"""

from __future__ import annotations

from pathlib import Path

from bot.config import Settings
from fixers.sandbox import Limits, SandboxOptions, sandbox_problem, tree_limits_problem


def sandbox_limits(settings: Settings, timeout_s: float) -> Limits:
    """What one sandboxed command may use, as the settings say; ``timeout_s`` is its own."""
    return Limits(
        timeout_s=timeout_s,
        max_memory_bytes=settings.sandbox_memory_bytes,
        max_processes=settings.sandbox_processes,
        max_cpu_s=settings.sandbox_cpu_seconds,
        cpus=settings.sandbox_cpus,
        max_disk_bytes=settings.sandbox_disk_bytes,
    )


def sandbox_options(settings: Settings) -> SandboxOptions:
    """Confinement for every target process the service starts.

    The data dir (SQLite files, the broker, every repository checkout) and the GitHub App key are
    never visible, even when a path the sandbox sees contains them. No command may use more than
    the settings' limits (an import check's own are tighter), each in a cgroup of its own under
    ``sandbox_cgroup_root`` where one can be made.
    """
    hidden = [settings.data_dir]
    if settings.github_private_key_path is not None:
        hidden.append(settings.github_private_key_path)
    # A path that does not exist has nothing to hide, and bubblewrap cannot make a mount point
    # for it inside a read-only bind (the default data dir ``./.repairbot``, from a checkout).
    return SandboxOptions(
        allow_unsandboxed=settings.allow_unsandboxed,
        hidden=tuple(Path(p).absolute() for p in hidden if Path(p).exists()),
        cgroup_root=settings.sandbox_cgroup_root,
        ceiling=sandbox_limits(settings, Limits.timeout_s),
    )


def sandbox_state(settings: Settings) -> dict[str, str]:
    """How target code is confined on this host, for diagnostics (``/readyz``, worker start):
    the sandbox, and what bounds a command's whole process tree (or why only its processes)."""
    problem = sandbox_problem()
    tree = tree_limits_problem(settings.sandbox_cgroup_root)
    if problem is None:
        sandbox = "bubblewrap"
    elif settings.allow_unsandboxed:
        sandbox = f"NOT SANDBOXED ({problem}; allowed explicitly, for development only)"
    else:
        sandbox = f"unavailable, target code is not run: {problem}"
    limits = (
        f"a cgroup per command under {settings.sandbox_cgroup_root}"
        if tree is None
        else f"per-process rlimits only: {tree}"
    )
    return {"sandbox": sandbox, "tree_limits": limits}


def sandbox_note(settings: Settings) -> str:
    """``sandbox_state`` as one line, for a worker's start."""
    state = sandbox_state(settings)
    return f"sandbox: {state['sandbox']}; tree limits: {state['tree_limits']}"
