"""The sandbox for target-repository code: one launcher (``run_isolated``), its view and limits.

Library level on purpose: ``fixers`` (the import probe) and ``bot`` (verification, the demo) both
run target code, and ``fixers`` never imports ``bot``.
"""

from fixers.sandbox.launch import (
    SandboxResult,
    SandboxUnavailable,
    clean_environment,
    open_output,
    read_output,
    run_isolated,
    sandbox_problem,
)
from fixers.sandbox.limits import GIB, Limits
from fixers.sandbox.view import SANDBOX_UID, STRICT, SandboxOptions

__all__ = [
    "GIB",
    "SANDBOX_UID",
    "STRICT",
    "Limits",
    "SandboxOptions",
    "SandboxResult",
    "SandboxUnavailable",
    "clean_environment",
    "open_output",
    "read_output",
    "run_isolated",
    "sandbox_problem",
]
