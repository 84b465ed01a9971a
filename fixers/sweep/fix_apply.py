"""Applying one file's planned codemods in memory, with the evidence that needs no sandbox.

Each step runs on the text the previous one produced (parsed once, and that parse shared with
the second-run check); the result is remembered by content (``apply_plan``), since the codemods
are pure functions of the text and the steps.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict

import libcst as cst
from libcst.codemod import SkipFile

from fixers.evidence.safety import python_problem, scope_problem
from fixers.sweep.fix_plan import FilePlan, Step
from fixers.sweep.outcome import Evidence, FileChange, Skip


def _apply(step: Step, tree: cst.Module) -> tuple[cst.Module | None, str]:
    """Run ``step`` on ``tree``: the new tree, or None and why it did not apply.

    As LibCST's ``transform_module`` does, but on a tree parsed once for every step that reads
    the same text (the commands never change the tree they are given).
    """
    try:
        return step.make().transform_module(tree), ""
    except SkipFile as exc:
        return None, str(exc)
    except Exception as exc:  # a codemod's bug skips this step, it does not end the repair
        return None, f"{step.name} failed: {exc}"


def _parse(code: str) -> tuple[cst.Module | None, str]:
    try:
        return cst.parse_module(code), ""
    except (cst.ParserSyntaxError, ValueError) as exc:
        return None, f"generated code does not parse: {exc}"


def _apply_plan(
    plan: FilePlan, source: str, python: tuple[int, int] | None
) -> tuple[FileChange | None, list[Skip]]:
    """Apply a file's steps in order, each to the text the previous one produced, then gather
    the evidence: parses, a second run of every step changes nothing, and the diff's scope."""
    tree, problem = _parse(source)
    if tree is None:
        return None, [Skip(plan.path, f"the file does not parse: {problem}")]
    code = source
    skips: list[Skip] = []
    done: list[Step] = []
    for step in plan.steps:
        new, why = _apply(step, tree)
        if new is None:
            skips.append(Skip(plan.path, why, ",".join(step.classes)))
            continue
        code, done = new.code, [*done, step]
        tree, problem = _parse(code)  # the next step (and the evidence) read the text
        if tree is None:
            return None, [*skips, Skip(plan.path, problem)]
    if not done:
        return None, skips
    invalid = python_problem(code, python)
    if invalid is not None:
        return None, [*skips, Skip(plan.path, invalid)]
    idempotent = all(_apply(step, tree)[0] is None for step in done)
    classes = sorted({c for step in done for c in step.classes})
    stray = scope_problem(source, code, classes)
    change = FileChange(
        plan.path, plan.module, source, code, list(dict.fromkeys(s.name for s in done)), classes
    )
    change.evidence = Evidence(
        parses=True, idempotent=idempotent, scoped=not stray, scope_detail=stray
    )
    return change, skips


_APPLIED: OrderedDict[tuple[object, ...], tuple[FileChange | None, tuple[Skip, ...]]] = (
    OrderedDict()
)
_APPLIED_LOCK = threading.Lock()
APPLIED_CACHE_SIZE = 256  # files; each entry holds the file's text before and after


def apply_plan(
    plan: FilePlan, source: str, python: tuple[int, int] | None
) -> tuple[FileChange | None, list[Skip]]:
    """Apply ``plan`` to ``source`` (``_apply_plan``), remembered by content: the codemods are
    pure functions of the text and the steps, so a file met again (the same broken commit is
    reported by every PR's CI) is not rewritten again. Returns copies: the caller adds the import
    evidence to its change."""
    steps = tuple(
        (s.name, s.command.__module__, s.command.__qualname__, repr(sorted(s.options.items())))
        for s in plan.steps
    )
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
    key = (plan.path, plan.module, digest, python, steps, tuple(s.classes for s in plan.steps))
    with _APPLIED_LOCK:
        known = _APPLIED.get(key)
        if known is not None:
            _APPLIED.move_to_end(key)
    if known is None:
        made, skipped = _apply_plan(plan, source, python)
        known = (made, tuple(skipped))
        with _APPLIED_LOCK:
            _APPLIED[key] = known
            while len(_APPLIED) > APPLIED_CACHE_SIZE:
                _APPLIED.popitem(last=False)
    change, skips = known
    if change is not None:
        change = dataclasses.replace(
            change, codemods=list(change.codemods), classes=list(change.classes)
        )
    return change, list(skips)
