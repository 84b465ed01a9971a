"""Which runs a classified report needs (``plan_runs``): one per root cause."""

from __future__ import annotations

from bot.pipeline.repair.plan import fixable_tests, plan_runs, scoped_tests
from fixers.classify.failures import Failure
from fixers.classify.root_causes import classify_failures


def _failure(test: str, text: str) -> Failure:
    return Failure(test_id=test, error_text=text)


def test_missed_subclasses_of_one_contract_change_are_one_learned_run() -> None:
    findings = classify_failures([
        _failure("t::a", "TypeError: Can't instantiate abstract class RailCarrier without an "
                 "implementation for abstract method 'ship'"),
        _failure("t::b", "TypeError: Can't instantiate abstract class FakeCarrier without an "
                 "implementation for abstract method 'ship'"),
        _failure("t::c", "TypeError: Gauge.sample() got an unexpected keyword argument 'labels'"),
    ])  # fmt: skip
    runs = plan_runs(findings)
    assert [(r.signature, r.contract.name if r.contract else None) for r in runs] == [
        ("abstract-class-instantiation", "learned:missing-abstract:ship:"),
        ("override-unexpected-keyword", "learned:unexpected-keyword:sample:labels"),
    ]
    assert all(r.fixable and r.contract and r.contract.source == "learned" for r in runs)


def test_a_known_contract_and_a_learned_break_are_two_runs_and_tests_stay_apart() -> None:
    findings = classify_failures([
        _failure("t::guard", "TypeError: MTPWorker must not override SpecWorkerBase.forward; "
                 "implement _forward_impl instead."),
        _failure("t::ship", "TypeError: Can't instantiate abstract class RailCarrier with "
                 "abstract method ship"),
    ])  # fmt: skip
    runs = plan_runs(findings)
    assert [r.contract.source if r.contract else None for r in runs] == ["builtin", "learned"]
    # The known contract's fix answers for its own tests only.
    assert fixable_tests(findings) == ["t::guard"]


def test_each_runs_tests_are_its_root_causes_and_the_rest_are_not_addressed() -> None:
    findings = classify_failures([
        _failure("t::guard", "TypeError: MTPWorker must not override SpecWorkerBase.forward; "
                 "implement _forward_impl instead."),
        _failure("t::ship", "TypeError: Can't instantiate abstract class RailCarrier with "
                 "abstract method ship"),
        _failure("t::x", "ModuleNotFoundError: No module named 'x'"),
    ])  # fmt: skip
    guard, learned = plan_runs(findings)
    assert scoped_tests(findings, [guard.root_cause]) == (["t::guard"], ["t::ship", "t::x"])
    # A learned fix answers for its break's tests (and not for the known contract's).
    assert scoped_tests(findings, [learned.root_cause]) == (["t::ship"], ["t::guard", "t::x"])
    assert scoped_tests(findings, [guard.root_cause, learned.root_cause])[0] == [
        "t::guard", "t::ship"
    ]  # fmt: skip


def test_a_report_with_nothing_fixable_is_one_unfixable_run() -> None:
    findings = classify_failures([_failure("t::x", "ModuleNotFoundError: No module named 'x'")])
    [run] = plan_runs(findings)
    assert run.contract is None and not run.fixable
