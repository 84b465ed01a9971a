"""Sweep a repository for every violation of its contracts, and fix them all in one change.

``sweep`` reports; ``fix`` plans codemods per file, applies them in memory, gathers safety
evidence, and returns the changes (``write_changes`` puts them on disk). I/O stays at the edges:
reading the tree (through ``RepoIndex``) and the import subprocess.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from fixers.classify.failures import Finding
from fixers.codemods._common import DEFAULT_LINE_LENGTH
from fixers.contracts.model import (
    BUILTIN_CONTRACTS,
    LOG_SOURCE,
    Contract,
    RepoConfig,
    load_config,
    read_repo_toml,
)
from fixers.evidence.import_check import (
    DEFAULT_PRELOAD,
    ImportServer,
    check_imports,
    imported_of,
    start_server,
)
from fixers.learned.breaks import LEARNED_SOURCE, ContractBreak, breaks_of
from fixers.learned.engine import MigrationEngine
from fixers.learned.history import History
from fixers.learned.learning import Learning
from fixers.learned.policy import Policy
from fixers.repo.paths import FileRefused, read_repo_file, write_repo_file
from fixers.sandbox import STRICT, SandboxOptions
from fixers.sweep.fix_apply import apply_plan
from fixers.sweep.fix_plan import plan_fixes
from fixers.sweep.index import Hierarchy, IndexCache, RepoIndex
from fixers.sweep.outcome import FileChange, FixResult, ImportStatus, Skip, SweepResult
from fixers.sweep.violation_types import Note, Violation
from fixers.sweep.violations import find_violations

Progress = Callable[[int, int], None]


@dataclass
class SweepState:
    """A report plus what fixing needs from the sweep (index, hierarchies, config)."""

    report: SweepResult
    index: RepoIndex
    hierarchies: list[Hierarchy]
    config: RepoConfig
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)


def _as_declared(contracts: list[Contract], declared: list[Contract]) -> list[Contract]:
    """A contract read off a CI log names no restore hook: the repository's own declaration of
    the same rule (configured or inferred from the base's source) says it, with its names."""
    same = {(c.base, c.forbidden, c.hook): c for c in reversed(declared)}
    return [
        same.get((c.base, c.forbidden, c.hook), c) if c.source == LOG_SOURCE else c
        for c in contracts
    ]


def _dedupe(contracts: list[Contract]) -> list[Contract]:
    seen: dict[tuple[str, str], Contract] = {}
    for contract in contracts:
        seen.setdefault((contract.base, contract.forbidden), contract)
    return list(seen.values())


def line_length(root: Path) -> int:
    """The repository's configured line length (black, ruff, yapf), else black's 88."""
    data = read_repo_toml(root, "pyproject.toml")
    if data is None:
        return DEFAULT_LINE_LENGTH
    tool = data.get("tool", {})
    for key, name in (("black", "line-length"), ("ruff", "line-length"), ("yapf", "column_limit")):
        value = tool.get(key, {}).get(name) if isinstance(tool.get(key), dict) else None
        if isinstance(value, int) and value > 0:
            return value
    return DEFAULT_LINE_LENGTH


def run_sweep(
    root: Path,
    contracts: list[Contract] | None = None,
    *,
    cache: IndexCache | None = None,
    infer: bool = True,
    progress: Progress | None = None,
) -> SweepState:
    """Index ``root`` and find every violation of the given (or configured) contracts.

    ``SweepState.seconds`` says how long each step took; ``index.stats.seconds`` the time of
    the work on files inside them (reading, searching, hashing, parsing, facts)."""
    clock = time.perf_counter()
    config = load_config(root)
    seconds = {"config": time.perf_counter() - clock}
    clock = time.perf_counter()
    index = RepoIndex(root, cache, config.exclude, max_file_bytes=config.max_file_bytes)
    seconds["list files"] = time.perf_counter() - clock
    clock = time.perf_counter()
    wanted = [*BUILTIN_CONTRACTS, *config.contracts] if contracts is None else contracts
    index.expect(frozenset(c.base for c in wanted))
    if contracts is None:
        contracts = [*BUILTIN_CONTRACTS, *config.contracts]
        if infer:
            contracts.extend(index.inferred_contracts())
    elif any(c.source == LOG_SOURCE for c in contracts):
        declared = [*config.contracts, *(index.inferred_contracts() if infer else [])]
        contracts = _as_declared(contracts, declared)
    contracts = _dedupe(contracts)
    seconds["contracts"] = time.perf_counter() - clock
    clock = time.perf_counter()
    hierarchies = index.load_hierarchies(contracts, progress)
    seconds["hierarchies"] = time.perf_counter() - clock
    clock = time.perf_counter()
    violations: list[Violation] = []
    notes: list[Note] = []
    for hierarchy in hierarchies:
        found, observed = find_violations(index, hierarchy, config.test_dirs)
        violations.extend(found)
        notes.extend(observed)
    seconds["violations"] = time.perf_counter() - clock
    skips = [Skip(rel, reason) for rel, reason in sorted(index.errors.items())]
    report = SweepResult(
        root=str(root),
        contracts=contracts,
        listing=index.listing,
        files=index.stats.files,
        files_read=index.stats.read,
        files_parsed=index.stats.parsed,
        violations=violations,
        notes=notes,
        skips=skips,
        config_errors=list(config.errors),
    )
    return SweepState(report, index, hierarchies, config, seconds)


def sweep(root: Path, contracts: list[Contract] | None = None, **kwargs: object) -> SweepResult:
    """The report of ``run_sweep`` (the keyword options are the same)."""
    return run_sweep(root, contracts, **kwargs).report  # type: ignore[arg-type]


def _read_text(root: Path, rel: str, max_bytes: int) -> tuple[str | None, str]:
    try:
        return read_repo_file(root, rel, max_bytes).decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, "not UTF-8: LibCST edits need the text"
    except FileRefused as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"unreadable: {exc.strerror or exc}"


def fix(
    root: Path,
    contracts: list[Contract] | None = None,
    *,
    cache: IndexCache | None = None,
    imports: bool = True,
    progress: Progress | None = None,
    sandbox: SandboxOptions = STRICT,
    server: ImportServer | None = None,
    preload: Sequence[str] = DEFAULT_PRELOAD,
    held: Callable[[Violation], bool] | None = None,
    findings: Sequence[Finding] = (),
    python: str = sys.executable,
) -> FixResult:
    """Sweep ``root``, plan and apply every fix in memory, and attach evidence to each change.

    ``findings``: the classified failures of a CI log; the contract breaks among them are
    learned from the history of ``root`` (``fixers.learned``) and their misses fixed too.

    ``held``: violations it returns True for are neither fixed nor reported as found; they are
    listed in ``FixResult.held`` (a suppression keeps them for a human).

    ``imports`` runs the import check, in the sandbox that ``sandbox`` describes: on ``server``
    when one was started ahead for ``root`` (with the same ``sandbox``), else on one started
    here right after the sweep (importing at once those of ``preload`` that the files the sweep
    read import, the others once a module needs one), so that its interpreter warms up while
    the codemods run. The server is closed either way. ``python``: the interpreter the check
    imports with (the target's own environment, when it has one; a ``server`` must run it).
    """
    clock = time.perf_counter()
    state = run_sweep(root, contracts, cache=cache, progress=progress)
    learnings = learn_from(root, state, findings)
    state, kept_back = _hold(state, held)
    seconds = {"sweep": time.perf_counter() - clock}
    try:
        clock = time.perf_counter()
        later: Sequence[str] = ()
        if imports and server is None and state.report.violations:
            server, preload, later = _warm_server(root, state, python, sandbox, preload)
        started = time.perf_counter() - clock
        result = fix_in_memory(root, state)
        result.held = kept_back
        result.learned = learnings
        result.seconds = {**seconds, "fix": time.perf_counter() - clock - started}
        if imports and result.changes:
            clock = time.perf_counter()
            results = check_imports(
                root, result.changes, python=python, sandbox=sandbox, server=server,
                preload=preload, later=later,
            )  # fmt: skip
            server = None  # check_imports closed it
            result.seconds["import evidence"] = started + time.perf_counter() - clock
            attach_imports(result.changes, results)
    finally:
        if server is not None:
            server.close()
    settle_learnings(result)
    return result


def _warm_server(
    root: Path, state: SweepState, python: str, sandbox: SandboxOptions, preload: Sequence[str]
) -> tuple[ImportServer, list[str], list[str]]:
    """An import server for ``root``, started now so it warms up while the codemods run: what
    the files the sweep read import at module level is preloaded; the rest of ``preload`` only
    once a module's import needs it."""
    now = imported_of(preload, _imported(state))
    later = [name for name in preload if name not in now]
    server = start_server(root, python=python, sandbox=sandbox, preload=now, later=later)
    return server, list(now), later


def settle_learnings(result: FixResult) -> None:
    """Each learning's "fixed" decisions agree with the change: a class whose edit the codemod
    refused, whose file could not be changed or failed its evidence, or that a suppression
    holds, is reported with the reason."""
    failed: dict[tuple[str, str], str] = {}
    held = {(v.path, v.class_qualname) for v in result.held}
    for learning in result.learned:
        for d in learning.decisions:
            if any(p == d.path and (q == d.class_name or q.endswith("." + d.class_name))
                   for p, q in held):  # fmt: skip
                failed[(d.path, d.class_name)] = "held by a suppression"
    for skip in result.skips:
        for name in (skip.class_qualname or "").split(","):
            failed.setdefault((skip.path, name), skip.reason)
    made: set[tuple[str, str]] = set()
    for change in result.changes:
        ok = change.evidence is None or change.evidence.ok
        why = "its file failed the checks: " + "; ".join(
            change.evidence.lines() if change.evidence else []
        )
        for name in change.classes:
            made.add((change.path, name))
            if not ok:
                failed.setdefault((change.path, name), why)
    for learning in result.learned:
        learning.settle(failed, made)


def _hold(
    state: SweepState, held: Callable[[Violation], bool] | None
) -> tuple[SweepState, list[Violation]]:
    """``state`` without the violations ``held`` keeps back, and those violations."""
    kept_back = [v for v in state.report.violations if held is not None and held(v)]
    if not kept_back:
        return state, []
    kept = [v for v in state.report.violations if v not in kept_back]
    report = dataclasses.replace(state.report, violations=kept)
    return dataclasses.replace(state, report=report), kept_back


def learn_from(
    root: Path,
    state: SweepState,
    findings: Sequence[Finding] = (),
    *,
    breaks: Sequence[ContractBreak] = (),
    history: History | None = None,
    only: Collection[str] | None = None,
) -> list[Learning]:
    """Learn the contract breaks ``findings`` name (and ``breaks``, found without a log) from
    the history of ``root`` (or ``history``), and add their violations and hierarchies to
    ``state``; subclasses reported rather than fixed become skips with the reason.

    ``only``: the files a change touched (a check of that change): misses elsewhere are the
    base's, not the change's, and are left out."""
    covered = _contract_repairs(state)
    wanted = [
        brk
        for brk in [*breaks_of(findings), *breaks]
        if (brk.class_name, brk.method) not in covered
    ]
    if not wanted:
        return []
    learned = state.config.learned
    policy = Policy(learned.forbid, learned.pins, test_dirs=state.config.test_dirs)
    engine = MigrationEngine(root, state.index, policy, history)
    learnings = engine.learn_breaks(wanted)
    for learning in learnings:
        if only is not None:
            learning.violations = [v for v in learning.violations if v.path in only]
            learning.decisions = [d for d in learning.decisions if d.path in only]
        if learning.hierarchy is not None and learning.violations:
            state.hierarchies.append(learning.hierarchy)
            state.report.violations.extend(learning.violations)
        reported = [d for d in learning.decisions if d.outcome == "reported"]
        state.report.skips.extend(Skip(d.path, d.reason, d.class_name) for d in reported)
    return learnings


def _contract_repairs(state: SweepState) -> set[tuple[str, str]]:
    """(class, method) pairs a declared contract's violation already repairs: a worker that
    overrides ``forward`` also lacks the abstract ``_forward_impl``, one break, not two."""
    hooks = {c.name: c.hook for c in state.report.contracts if c.source != LEARNED_SOURCE}
    return {
        (v.class_qualname.rsplit(".", 1)[-1], hooks[v.contract])
        for v in state.report.violations
        if v.contract in hooks
    }


def _imported(state: SweepState) -> set[str]:
    """The dotted names that the files the sweep parsed import at module level."""
    return {target for facts in state.index.facts.values() for _, target in facts.bindings}


def fix_in_memory(
    root: Path, state: SweepState, violations: Sequence[Violation] | None = None
) -> FixResult:
    """Plan and apply the codemods for ``violations`` (default: every one the sweep found); the
    changes carry every evidence but the imports."""
    plans, skips = plan_fixes(
        state.index,
        state.hierarchies,
        list(state.report.violations if violations is None else violations),
        state.config.python,
        line_length(root),
    )
    changes: list[FileChange] = []
    for plan in plans:
        source, why = _read_text(root, plan.path, state.config.max_file_bytes)
        if source is None:
            skips.append(Skip(plan.path, why))
            continue
        change, more = apply_plan(plan, source, state.config.python)
        skips.extend(more)
        if change is not None:
            changes.append(change)
    return FixResult(state.report, changes, skips)


def attach_imports(changes: list[FileChange], results: dict[str, tuple[ImportStatus, str]]) -> None:
    """Record each change's import-check answer in its evidence (no answer: unverified)."""
    for change in changes:
        status, detail = results.get(change.path, ("unverified", "no answer"))
        assert change.evidence is not None
        change.evidence = dataclasses.replace(
            change.evidence, import_status=status, import_detail=detail
        )


def write_changes(root: Path, result: FixResult) -> list[str]:
    """Write every change whose evidence holds; returns the paths written."""
    written: list[str] = []
    for change in result.changes:
        if change.evidence is not None and not change.evidence.ok:
            result.skips.append(
                Skip(
                    change.path,
                    "evidence failed: not written: " + "; ".join(change.evidence.lines()),
                )
            )
            continue
        try:
            write_repo_file(root, change.path, change.after.encode("utf-8"))
        except FileRefused as exc:
            result.skips.append(Skip(change.path, f"not written: {exc}"))
            continue
        written.append(change.path)
    return written
