"""The sandbox for target-repository code: one launcher (``run_isolated``, ``start_isolated``),
its view and limits.

Library level on purpose: ``fixers`` (the import probe) and ``bot`` (verification, the demo) both
run target code, and ``fixers`` never imports ``bot``.
"""

from fixers.sandbox.launch import (
    Running,
    SandboxResult,
    SandboxUnavailable,
    clean_environment,
    run_isolated,
    sandbox_problem,
    start_isolated,
    stop_isolated,
    wait_isolated,
)
from fixers.sandbox.limits import GIB, Limits
from fixers.sandbox.outputs import open_output, read_output
from fixers.sandbox.view import SANDBOX_UID, STRICT, SandboxOptions

__all__ = [
    "GIB",
    "SANDBOX_UID",
    "STRICT",
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
    "wait_isolated",
]
