"""The sandbox for target-repository code: one launcher (``run_isolated``, ``start_isolated``),
its view and limits (a cgroup per command where the host allows, ``tree_limits_problem`` says
why not).

Library level on purpose: ``fixers`` (the import probe) and ``bot`` (verification, the demo) both
run target code, and ``fixers`` never imports ``bot``.
"""

from fixers.sandbox.cgroups import CGROUP_ROOT
from fixers.sandbox.environment import clean_environment
from fixers.sandbox.launch import (
    Running,
    SandboxResult,
    SandboxUnavailable,
    run_isolated,
    sandbox_problem,
    start_isolated,
    stop_isolated,
    tree_limits_problem,
    wait_isolated,
)
from fixers.sandbox.limits import CPU, DISK, GIB, MEMORY, PROCESSES, TIMEOUT, LimitHit, Limits
from fixers.sandbox.outputs import open_output, read_output
from fixers.sandbox.view import SANDBOX_UID, STRICT, SandboxOptions

__all__ = [
    "CGROUP_ROOT",
    "CPU",
    "DISK",
    "GIB",
    "MEMORY",
    "PROCESSES",
    "SANDBOX_UID",
    "STRICT",
    "TIMEOUT",
    "LimitHit",
    "Limits",
    "Running",
    "SandboxOptions",
    "SandboxResult",
    "SandboxUnavailable",
    "clean_environment",
    "open_output",
    "read_output",
    "run_isolated",
    "sandbox_problem",
    "start_isolated",
    "stop_isolated",
    "tree_limits_problem",
    "wait_isolated",
]
