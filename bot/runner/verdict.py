"""Before and after → a verdict, per test and for the fix. Pure functions, no I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.db.models import Verdict

FAILING = frozenset({"failed", "error"})


@dataclass(frozen=True)
class TestVerdict:
    """One test's outcome before and after the fix, and what that means."""

    test_id: str
    before: str
    after: str
    # fixed | still_failing | not_reproduced | new_failure | passing | skipped | not_addressed
    meaning: str


def outcome_of(test_id: str, outcomes: Mapping[str, str]) -> str:
    """A test's outcome; a test whose module failed to import counts as that error."""
    if test_id in outcomes:
        return outcomes[test_id]
    module = test_id.split("::", 1)[0]
    if outcomes.get(module) in FAILING:
        return outcomes[module]
    return "not_run"


def compare(
    before: Mapping[str, str],
    after: Mapping[str, str],
    targets: Sequence[str],
    others: Sequence[str] = (),
) -> list[TestVerdict]:
    """Per-test meaning for every test seen after the fix (module-level errors included).

    ``others``: failed tests of root causes this fix does not address (the same log's other
    failures): one still failing is ``not_addressed``, not the fix's failure; every one of them
    is listed, run or not. One that passed before and fails after is the fix's new failure."""
    target_set = set(targets)
    other_set = set(others) - target_set
    ran_after = {test_id.split("::", 1)[0] for test_id in after if "::" in test_id}
    # A module that failed to import before is judged through its tests after; only a module
    # none of whose tests ran after the fix stays a failure of its own.
    broken_before = {
        t for t in before if t not in after and before[t] in FAILING and t not in ran_after
    }
    verdicts = []
    for test_id in sorted(set(after) | broken_before | other_set):
        was, now = outcome_of(test_id, before), outcome_of(test_id, after)
        targeted = test_id in target_set or test_id.split("::", 1)[0] in target_set
        other = not targeted and (test_id in other_set or test_id.split("::", 1)[0] in other_set)
        if other and was != "passed" and now != "passed":
            meaning = "not_addressed"
        elif now == "skipped":
            meaning = "skipped"
        elif was in FAILING and now == "passed":
            meaning = "fixed"
        elif now in FAILING or now == "not_run":
            broke = was == "passed" or (was == "not_run" and not targeted)
            meaning = "new_failure" if broke else "still_failing"
        elif targeted and was == "passed":
            meaning = "not_reproduced"
        else:
            meaning = "passing"
        verdicts.append(TestVerdict(test_id, was, now, meaning))
    return verdicts


def overall(tests: Sequence[TestVerdict], extra_ok: bool = True) -> Verdict:
    """The fix's verdict: new failures, then still failing, then not reproduced, else fixed
    (tests of root causes it does not address never decide it)."""
    meanings = {t.meaning for t in tests}
    if "new_failure" in meanings:
        return Verdict.NEW_FAILURES
    if "still_failing" in meanings or not extra_ok:
        return Verdict.STILL_FAILING
    if "fixed" not in meanings:
        return Verdict.NOT_REPRODUCED
    return Verdict.FIXED
