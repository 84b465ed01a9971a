"""A whole verification: worktrees at base and head, the same tests on both, a verdict."""

from __future__ import annotations

import dataclasses
import shutil
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.git import fresh_worktree, remove_worktree
from bot.runner.device import on_requested_device, probe_command
from bot.runner.environment import (
    EnvironmentProblem,
    TargetPython,
    describe,
    target_python,
)
from bot.runner.environment import probe_command as env_probe_command
from bot.runner.phases import PhaseContext, PhaseResult, run_phase
from bot.runner.selection import Selection, select_tests
from bot.runner.verdict import TestVerdict, compare, overall
from fixers.sandbox import (
    STRICT,
    LimitHit,
    Limits,
    SandboxOptions,
    clean_environment,
    read_output,
    run_isolated,
)


@dataclass(frozen=True)
class VerificationPlan:
    """What to verify: a fix branch against its base, and the tests the failure named."""

    repo: Path
    base_sha: str
    head_sha: str
    changed_files: list[str]
    failed_tests: list[str]  # the tests of the root causes this fix addresses
    requested_queue: str
    # Failed tests of the same reports' other root causes: listed, never the verdict's.
    other_tests: list[str] = field(default_factory=list)


@dataclass
class VerificationOutcome:
    """Everything a verification found out; ``verdict`` is None when it could not decide."""

    device: str
    host: str
    on_requested_device: bool
    selection: Selection
    tests: list[TestVerdict] = field(default_factory=list)
    verdict: str | None = None
    problems: list[str] = field(default_factory=list)
    timed_out: bool = False
    cancelled: bool = False
    flaky: list[str] = field(default_factory=list)
    seconds: float = 0.0
    isolation: str = ""
    environment: str = ""  # the interpreter the tests ran with, and its key packages
    limit: LimitHit | None = None  # the first sandbox limit the tests reached (then no verdict)

    def limit_reason(self) -> str:
        """Which sandbox limit stopped the tests, in words ("" when none did)."""
        if self.limit is None:
            return ""
        return f"sandbox limit hit ({self.limit.name}): the tests' process tree {self.limit.detail}"

    def results(self) -> dict[str, Any]:
        """JSON-ready results for the database and the dashboard."""
        return {
            "tests": [vars(t) for t in self.tests],
            "selection": vars(self.selection),
            "flaky": self.flaky,
            "problems": self.problems,
            "isolation": self.isolation,
            "environment": self.environment,
            "seconds": round(self.seconds, 2),
            "timed_out": self.timed_out,
            "limit": self.limit.name if self.limit else None,
        }


def probe_device(
    run_dir: Path, python: str, log_path: Path, options: SandboxOptions = STRICT
) -> str:
    """``torch.cuda.get_device_name()`` as the test subprocess sees it, or ``cpu``."""
    out = run_dir / "device.txt"
    result = run_isolated(
        probe_command(python, out),
        cwd=run_dir,
        run_dir=run_dir,
        log_path=log_path,
        limits=Limits(timeout_s=120),
        options=dataclasses.replace(options, interpreters=(python,)),
    )
    name = read_output(out, max_bytes=200) if result.returncode == 0 else None
    if name is None:
        return "cpu (device probe failed: is torch installed?)"
    return name.strip() or "cpu"


def probe_environment(
    run_dir: Path, chosen: TargetPython, log_path: Path, options: SandboxOptions = STRICT
) -> str:
    """The interpreter's Python and key package versions, read inside the sandbox (an
    environment's packages may run code as Python starts)."""
    out = run_dir / "environment.json"
    result = run_isolated(
        env_probe_command(chosen.python, out, list(chosen.requirements)),
        cwd=run_dir,
        run_dir=run_dir,
        log_path=log_path,
        limits=Limits(timeout_s=120),
        options=dataclasses.replace(options, interpreters=(chosen.python,)),
    )
    probed = read_output(out, max_bytes=4000) if result.returncode == 0 else None
    try:
        return describe(probed) if probed else "its versions could not be read"
    except (ValueError, TypeError):
        return "its versions could not be read"


def verify(
    plan: VerificationPlan,
    *,
    run_dir: Path,
    limits: Limits,
    reruns: int,
    should_cancel: Callable[[], bool],
    python: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    sandbox: SandboxOptions = STRICT,
    environments: Path | None = None,
    images: Path | None = None,
) -> VerificationOutcome:
    """Run the selected tests at the base and at the fix head, and compare. ``python``: the
    interpreter; None: the target's own (``[verify]``, built ones cached in ``environments``,
    container images from ``images``).
    Raises ``fixers.sandbox.SandboxUnavailable`` (before running anything) when target code
    cannot be sandboxed and ``sandbox`` does not allow running it unconfined."""
    run_dir.mkdir(parents=True, exist_ok=True)
    log_path = run_dir / "verification.log"
    before_tree, after_tree = run_dir / "before", run_dir / "after"
    try:
        fresh_worktree(plan.repo, after_tree, plan.head_sha)
        fresh_worktree(plan.repo, before_tree, plan.base_sha)
        changed, failed, others = plan.changed_files, plan.failed_tests, plan.other_tests
        selection = select_tests(after_tree, changed=changed, failed=failed, others=others)
        chosen = _chosen_python(after_tree, python, environments, images)
        if isinstance(chosen, str):
            return VerificationOutcome(
                "not probed", socket.gethostname(), False, selection, problems=[chosen]
            )
        python = chosen.python
        if chosen.image_root is not None:  # its system view, in place of the host's
            sandbox = dataclasses.replace(sandbox, system_root=chosen.image_root)
        outcome = _probed(plan, selection, chosen, run_dir, log_path, sandbox)
        env = clean_environment(run_dir, extra_env)
        contexts = [
            (name, PhaseContext(tree, run_dir, log_path, python, limits, reruns, should_cancel,
                                env, sandbox))
            for name, tree in (("before", before_tree), ("after", after_tree))
        ]  # fmt: skip
        phases = _run_phases(outcome, selection, contexts)
        if phases is None:
            return outcome
        before, after = phases
        outcome.flaky = after.flaky
        outcome.tests = compare(
            before.outcomes, after.outcomes, selection.failed_tests, selection.other_tests
        )
        if not after.outcomes:
            outcome.problems.append("nothing ran after the fix: no test was selected or collected")
            return outcome
        outcome.verdict = overall(outcome.tests).value
        return outcome
    finally:
        remove_worktree(plan.repo, after_tree)
        remove_worktree(plan.repo, before_tree)


def _probed(
    plan: VerificationPlan,
    selection: Selection,
    chosen: TargetPython,
    run_dir: Path,
    log_path: Path,
    sandbox: SandboxOptions,
) -> VerificationOutcome:
    """The outcome so far: the device and environment as the tests will see them."""
    device = probe_device(run_dir, chosen.python, log_path, sandbox)
    versions = probe_environment(run_dir, chosen, log_path, sandbox)
    return VerificationOutcome(
        device=device,
        host=socket.gethostname(),
        on_requested_device=on_requested_device(device, plan.requested_queue),
        selection=selection,
        environment=f"{chosen.description} ({versions})",
    )


def _run_phases(
    outcome: VerificationOutcome,
    selection: Selection,
    contexts: list[tuple[str, PhaseContext]],
) -> tuple[PhaseResult, PhaseResult] | None:
    """Run the before and after phases, adding their time and problems to ``outcome``; None
    when one was interrupted (cancelled, timed out)."""
    phases: list[PhaseResult] = []
    for name, ctx in contexts:
        phase = run_phase(ctx, selection, name)
        phases.append(phase)
        outcome.seconds += phase.seconds
        outcome.isolation = phase.isolation
        outcome.problems += [f"{name}: {p}" for p in phase.problems]
        outcome.timed_out |= phase.timed_out
        outcome.cancelled |= phase.cancelled
        if phase.hits and outcome.limit is None:
            outcome.limit = phase.hits[0]
            outcome.problems += [f"{name}: {outcome.limit_reason()}"]
        if phase.interrupted:
            return None
    return phases[0], phases[1]


def _chosen_python(
    tree: Path, python: str | None, environments: Path | None, images: Path | None
) -> TargetPython | str:
    """The caller's interpreter, else the target's own (``[verify]``); or why there is none."""
    if python is not None:
        return TargetPython(python, f"{python} (chosen by the caller)")
    try:
        return target_python(tree, environments, images)
    except EnvironmentProblem as exc:
        return f"the target's environment: {exc}"


def discard(run_dir: Path) -> None:
    """Remove a run directory (logs are copied into the database first)."""
    shutil.rmtree(run_dir, ignore_errors=True)
