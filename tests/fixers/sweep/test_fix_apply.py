"""Applying a file's plan: each step on the previous one's text, evidence, and the content cache."""

from __future__ import annotations

import dataclasses

from fixers.codemods.rename_forbidden import CODEMOD as RENAME
from fixers.sweep.fix_apply import apply_plan
from fixers.sweep.fix_plan import FilePlan
from fixers.sweep.outcome import Evidence

SOURCE = "class W(SpecWorkerBase):\n    def forward(self, x):\n        return x\n"


def _plan(*classes: str) -> FilePlan:
    steps = [RENAME.step({"classes": [name]}, (name,)) for name in classes]
    return FilePlan("pkg/w.py", "pkg.w", steps)


def test_a_plan_is_applied_with_its_evidence_and_a_step_that_does_not_apply_is_a_skip() -> None:
    change, skips = apply_plan(_plan("W", "Missing"), SOURCE, (3, 10))
    assert change is not None
    assert change.after == SOURCE.replace("def forward", "def _forward_impl")
    assert change.evidence == Evidence(parses=True, idempotent=True, scoped=True, scope_detail="")
    assert [s.reason for s in skips] == ["class not found: Missing"]


def test_the_same_content_gives_the_same_change_as_a_copy_of_its_own() -> None:
    first, _ = apply_plan(_plan("W"), SOURCE, (3, 10))
    second, _ = apply_plan(_plan("W"), SOURCE, (3, 10))
    assert first is not None and second is not None and first is not second
    assert first == second
    second.evidence = dataclasses.replace(second.evidence, import_status="failed")  # type: ignore[type-var]
    second.codemods.append("another")
    third, _ = apply_plan(_plan("W"), SOURCE, (3, 10))
    assert third == first  # what a caller did to its copy reached no one else


def test_other_content_is_not_taken_for_the_same() -> None:
    other = SOURCE.replace("return x", "return -x")
    change, _ = apply_plan(_plan("W"), other, (3, 10))
    assert change is not None and "return -x" in change.after
    unparsable, skips = apply_plan(_plan("W"), "class W(:\n", (3, 10))
    assert unparsable is None and "does not parse" in skips[0].reason
