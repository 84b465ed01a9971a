"""One side of a verification (before or after): pytest with reruns, conformance, extra command."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bot.runner.selection import Selection
from bot.runner.verdict import FAILING
from fixers.intake import IntakeError
from fixers.intake.junit import iter_cases
from fixers.sandbox import (
    STRICT,
    LimitHit,
    Limits,
    SandboxOptions,
    SandboxResult,
    open_output,
    run_isolated,
)


@dataclass
class PhaseResult:
    """Outcomes by test id, plus how the commands ended."""

    outcomes: dict[str, str] = field(default_factory=dict)
    flaky: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    timed_out: bool = False
    cancelled: bool = False
    seconds: float = 0.0
    isolation: str = ""
    hits: list[LimitHit] = field(default_factory=list)  # sandbox limits its commands reached

    def absorb(self, result: SandboxResult) -> None:
        """Account for one command's ending."""
        self.seconds += result.seconds
        self.isolation = result.isolation
        self.timed_out |= result.timed_out
        self.cancelled |= result.cancelled
        self.hits += result.hits

    @property
    def interrupted(self) -> bool:
        """Whether the phase stopped before finishing (a timeout, a cancellation, or any other
        sandbox limit: what ran short of memory or processes says nothing about the fix)."""
        return self.timed_out or self.cancelled or bool(self.hits)


@dataclass(frozen=True)
class PhaseContext:
    """Where and how a phase runs."""

    worktree: Path
    run_dir: Path
    log_path: Path
    python: str
    limits: Limits
    reruns: int
    should_cancel: Callable[[], bool]
    env: dict[str, str]
    options: SandboxOptions = STRICT


def _run(ctx: PhaseContext, command: list[str]) -> SandboxResult:
    return run_isolated(
        command,
        cwd=ctx.worktree,
        run_dir=ctx.run_dir,
        log_path=ctx.log_path,
        limits=ctx.limits,
        env=ctx.env,
        options=dataclasses.replace(ctx.options, interpreters=(ctx.python,)),
        should_cancel=ctx.should_cancel,
    )


def _pytest(
    ctx: PhaseContext, phase: PhaseResult, targets: list[str], report: Path
) -> dict[str, str]:
    command = [
        ctx.python,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--continue-on-collection-errors",
        "-q",
        "-rfE",
        f"--junitxml={report}",
        *targets,
    ]
    phase.absorb(_run(ctx, command))
    if phase.interrupted:
        return {}
    if not report.is_file():
        phase.problems.append(
            f"pytest wrote no JUnit report ({' '.join(command[:3])}): is pytest installed?"
        )
        return {}
    try:
        # The test wrote this file: never follow a link it may have put there instead.
        with open_output(report) as stream:
            return {case.test_id: case.outcome for case in iter_cases(stream)}
    except (OSError, IntakeError) as exc:
        phase.problems.append(f"unreadable JUnit report: {exc}")
        return {}


def run_phase(ctx: PhaseContext, selection: Selection, name: str) -> PhaseResult:
    """Run the selection in ``ctx.worktree``; failing tests are re-run before they count."""
    phase = PhaseResult()
    # A test file the fix adds does not exist at the base: each side runs what it has.
    targets = [
        t for t in selection.pytest_targets if (ctx.worktree / t.split("::", 1)[0]).is_file()
    ]
    if targets:
        phase.outcomes = _pytest(ctx, phase, targets, ctx.run_dir / f"{name}.xml")
    for attempt in range(1, ctx.reruns + 1):
        failing = sorted(t for t, o in phase.outcomes.items() if o in FAILING and "::" in t)
        if not failing or phase.interrupted:
            break
        again = _pytest(ctx, phase, failing, ctx.run_dir / f"{name}-rerun{attempt}.xml")
        for test_id in failing:
            if again.get(test_id) == "passed":
                phase.outcomes[test_id] = "passed"
                phase.flaky.append(test_id)
    for package in selection.conformance_packages:
        if phase.interrupted:
            break
        result = _run(
            ctx,
            [ctx.python, "-m", "runtime.conformance", package, "--path", str(ctx.worktree), "-q"],
        )
        phase.absorb(result)
        phase.outcomes[f"conformance::{package}"] = "passed" if result.returncode == 0 else "failed"
    if selection.extra_command and not phase.interrupted:
        result = _run(ctx, selection.extra_command)
        phase.absorb(result)
        phase.outcomes[f"extra::{' '.join(selection.extra_command)}"] = (
            "passed" if result.returncode == 0 else "failed"
        )
    return phase
