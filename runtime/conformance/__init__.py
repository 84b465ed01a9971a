"""Conformance suite for SpecWorkerBase workers, usable on any package that follows the contract.

Discovery (`runtime.discovery`, re-exported here): import a package (by module path), walk its
modules (skipping `test*`, `conftest` and `tests` modules), and collect every `SpecWorkerBase`
subclass defined there - no hard-coded list.

Construction convention: a concrete worker class is built as `cls(SpecConfig(...))` with every
other argument defaulted, and builds its draft network with `worker.make_draft_model(target)`
(`None` for model-free drafting). It runs inside `runtime.engine.Engine`.

Checks, per worker class:
- guard: the class does not define `forward` (class creation passes the `__init_subclass__` guard);
- instantiable: the class is not abstract and builds with the convention above;
- success: every successful forward leaves `AttentionMetadata` and `SpecMetadata` exactly as it
  found them (every field, tensor values compared) and no saved spec-dec state;
- failure at (step, point, call): a forward that fails at that injection point - a named
  `fault_point` or the n-th draft-model call - leaves both metadata objects exactly as before the
  call, and the engine's retry (a tolerated failure) then produces the same tokens as a clean run.

Command line (from the repository root; exit status 0 when everything passes, 1 otherwise):

    python -m runtime.conformance runtime.speculative
    python -m runtime.conformance legacy_spec --path tests/fixtures/legacy_workers --no-guard
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from runtime.attention import diff_snapshots
from runtime.discovery import DEFAULT_PACKAGE, discover_workers
from runtime.engine import Engine, Step
from runtime.faults import FaultInjector, InjectedFault
from runtime.model import TinyLM, build_model
from runtime.speculative.interface import SpecConfig, SpecWorkerBase, guard_message, violates_guard

__all__ = [
    "DEFAULT_PACKAGE",
    "DRAFT_POINT",
    "CheckResult",
    "FaultCase",
    "Scenario",
    "build_engine",
    "check_failure",
    "check_guard",
    "check_instantiable",
    "check_success",
    "clean_run",
    "discover_workers",
    "fault_cases",
    "main",
    "run_suite",
]

DRAFT_POINT = "draft_model"  # injection point name of the draft model's calls


@dataclass(frozen=True)
class Scenario:
    """The workload every check runs: mixed prompt lengths, more requests than batch slots (so
    context and generation requests share steps), float64 so greedy ties cannot flip."""

    preset: str = "test"
    device: str = "cpu"
    dtype: torch.dtype = torch.float64
    prompt_lens: tuple[int, ...] = (5, 17, 9, 12)
    max_new_tokens: tuple[int, ...] = (7, 10, 8, 9)
    max_batch_size: int = 3
    spec_config: SpecConfig = field(default_factory=lambda: SpecConfig(max_draft_len=3))
    seed: int = 0

    def prompts(self, vocab_size: int) -> list[list[int]]:
        """Seeded prompts of `prompt_lens` tokens."""
        gen = torch.Generator().manual_seed(self.seed)
        return [
            torch.randint(1, vocab_size - 1, (n,), generator=gen).tolist() for n in self.prompt_lens
        ]


@dataclass(frozen=True)
class FaultCase:
    """Fail the worker's forward at the `call`-th hit of `point`, during engine step `step`."""

    step: int
    point: str
    call: int

    @property
    def id(self) -> str:
        """A short id for test names."""
        return f"step{self.step}-{self.point}#{self.call}"


@dataclass
class CheckResult:
    """Outcome of one check on one worker class."""

    worker: str
    check: str
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the check passed."""
        return not self.problems


# -- building and running ------------------------------------------------------------------------


def _target(scenario: Scenario) -> TinyLM:
    return build_model(scenario.preset, device=scenario.device, dtype=scenario.dtype)


def build_engine(cls: type[SpecWorkerBase], scenario: Scenario, *, error_budget: int = 0) -> Engine:
    """A fresh engine for `cls` with the scenario's requests queued."""
    target = _target(scenario)
    worker = cls(scenario.spec_config).to(device=scenario.device)
    draft = worker.make_draft_model(target)
    engine = Engine(
        target, worker, draft, max_batch_size=scenario.max_batch_size, error_budget=error_budget
    )
    for prompt, n in zip(
        scenario.prompts(target.cfg.vocab_size), scenario.max_new_tokens, strict=True
    ):
        engine.add_request(prompt, n)
    return engine


def _watch(engine: Engine, injector: FaultInjector) -> None:
    if isinstance(engine.draft_model, nn.Module):
        injector.attach(engine.draft_model, DRAFT_POINT)


@torch.inference_mode()
def clean_run(cls: type[SpecWorkerBase], scenario: Scenario) -> list[list[int]]:
    """Generated tokens of an undisturbed run, in request order."""
    done = build_engine(cls, scenario).run()
    return [done[rid] for rid in sorted(done)]


@torch.inference_mode()
def fault_cases(cls: type[SpecWorkerBase], scenario: Scenario) -> list[FaultCase]:
    """Injection points hit by each interesting step of a clean run.

    Steps: the first (all context), the second (all generation) and the first step that mixes
    context and generation requests.
    """
    engine = build_engine(cls, scenario)
    cases: list[FaultCase] = []
    index, seen_mixed = 0, False
    while engine.has_work():
        step = engine.prepare_step()
        mixed = 0 < step.num_contexts < len(step.requests)
        interesting = index < 2 or (mixed and not seen_mixed)
        seen_mixed = seen_mixed or mixed
        with FaultInjector() as recorder:
            _watch(engine, recorder)
            out = engine.run_worker(step)
        if interesting:
            cases.extend(FaultCase(index, name, call) for name, call in recorder.hits)
        engine.commit(step, out)
        index += 1
    return cases


# -- checks --------------------------------------------------------------------------------------


def check_guard(cls: type[SpecWorkerBase]) -> list[str]:
    """Class creation passes the guard: no `forward` of its own."""
    return [guard_message(cls.__name__)] if violates_guard(cls) else []


def check_instantiable(cls: type[SpecWorkerBase], scenario: Scenario | None = None) -> list[str]:
    """The class is concrete and builds with the construction convention."""
    scenario = scenario or Scenario()
    if inspect.isabstract(cls):
        missing = sorted(getattr(cls, "__abstractmethods__", ()))
        return [f"{cls.__name__} is abstract: missing {', '.join(missing)}"]
    try:
        worker = cls(scenario.spec_config)
        worker.make_draft_model(_target(scenario))
    except Exception as exc:
        return [f"{cls.__name__}(spec_config) / make_draft_model failed: {exc!r}"]
    return []


@torch.inference_mode()
def check_success(cls: type[SpecWorkerBase], scenario: Scenario | None = None) -> list[str]:
    """Every successful forward leaves both metadata objects as it found them."""
    scenario = scenario or Scenario()
    engine = build_engine(cls, scenario)
    problems: list[str] = []
    index = 0
    while engine.has_work() and not problems:
        step = engine.prepare_step()
        before_attn, before_spec = engine.attn_metadata.snapshot(), engine.spec_metadata.snapshot()
        out = engine.run_worker(step)
        problems += _diff_problems(engine, before_attn, before_spec, f"successful forward #{index}")
        engine.commit(step, out)
        index += 1
    return problems


def _diff_problems(
    engine: Engine, before_attn: dict[str, object], before_spec: dict[str, object], when: str
) -> list[str]:
    problems = []
    if engine.attn_metadata.has_spec_dec_saved_state:
        problems.append(f"{when} left spec-dec state saved on AttentionMetadata")
    changed = [
        f
        for f in diff_snapshots(before_attn, engine.attn_metadata.snapshot())
        if f != "_spec_dec_saved"
    ]
    if changed:
        problems.append(f"{when} changed AttentionMetadata fields {changed}")
    changed = diff_snapshots(before_spec, engine.spec_metadata.snapshot())
    if changed:
        problems.append(f"{when} changed SpecMetadata fields {changed}")
    return problems


@torch.inference_mode()
def check_failure(
    cls: type[SpecWorkerBase],
    case: FaultCase,
    scenario: Scenario | None = None,
    *,
    reference: list[list[int]] | None = None,
) -> list[str]:
    """A forward failing at `case` restores all metadata; the retried run matches a clean one."""
    scenario = scenario or Scenario()
    expected = reference if reference is not None else clean_run(cls, scenario)
    engine = build_engine(cls, scenario)
    for _ in range(case.step):
        engine.step()
    step: Step = engine.prepare_step()
    before_attn, before_spec = engine.attn_metadata.snapshot(), engine.spec_metadata.snapshot()
    when = f"a forward failing at {case.id}"
    with FaultInjector(case.point, case.call) as injector:
        _watch(engine, injector)
        try:
            engine.run_worker(step)
        except InjectedFault:
            pass
        except Exception as exc:
            return [f"{when} raised {exc!r} instead of the injected fault"]
    if not injector.fired:
        return [f"injection point {case.id} was never reached"]
    problems = _diff_problems(engine, before_attn, before_spec, when)
    # The failure was tolerated: the engine retries the step and carries on.
    try:
        done = engine.run()
    except Exception as exc:
        root = exc.__cause__ or exc
        return [*problems, f"the next forward after {when} failed: {type(root).__name__}: {root}"]
    got = [done[rid] for rid in sorted(done)]
    if got != expected:
        problems.append(f"after {when}, the tokens differ from a clean run")
    return problems


def run_suite(
    package: str,
    *,
    paths: tuple[str, ...] = (),
    guard: bool = True,
    scenario: Scenario | None = None,
    progress: Callable[[CheckResult], None] | None = None,
) -> list[CheckResult]:
    """Every check on every worker class of `package` (import errors propagate)."""
    scenario = scenario or Scenario()
    results: list[CheckResult] = []

    def record(result: CheckResult) -> None:
        results.append(result)
        if progress is not None:
            progress(result)

    for cls in discover_workers(package, paths=paths, guard=guard):
        name = f"{cls.__module__}.{cls.__qualname__}"
        record(CheckResult(name, "guard", check_guard(cls)))
        problems = check_instantiable(cls, scenario)
        record(CheckResult(name, "instantiable", problems))
        if problems:
            continue
        record(CheckResult(name, "success", _safe(functools.partial(check_success, cls, scenario))))
        try:
            reference = clean_run(cls, scenario)
            cases = fault_cases(cls, scenario)
        except Exception as exc:
            record(CheckResult(name, "clean run", [f"crashed: {type(exc).__name__}: {exc}"]))
            continue
        for case in cases:
            check = functools.partial(check_failure, cls, case, scenario, reference=reference)
            record(CheckResult(name, f"failure {case.id}", _safe(check)))
    return results


def _safe(check: Callable[[], list[str]]) -> list[str]:
    try:
        return check()
    except Exception as exc:
        return [f"check crashed: {type(exc).__name__}: {exc}"]
