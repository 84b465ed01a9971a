"""Per-test verification results, read forgivingly from a Verification's ``results`` JSON.

The runner's shape (``bot.runner``) is ``{"tests": [{"test_id", "before", "after", "meaning"}],
"problems": [...], "flaky": [...], ...}`` where ``before``/``after`` are pytest outcomes
(``passed``, ``failed``, ``error``, ``skipped``, ``not_run``); ``attempts``, ``duration_s`` and a
per-test ``log`` are shown when present, and an outcome may be ``{"outcome": ..., "log": ...}``.
A mapping ``{nodeid: {...}}`` (at the top level or under ``"tests"``) and
``{"before": {nodeid: outcome}, "after": {nodeid: outcome}}`` are read too, so the page shows
what the runner stored even while its format settles.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

NAME_KEYS = ("test_id", "nodeid", "test", "name", "id")
PASSING = frozenset({"passed", "pass", "ok", "xfail", "xfailed", "success"})
FAILING = frozenset(
    {"failed", "fail", "error", "errored", "timeout", "crashed", "failure", "not_run"}
)


@dataclass(frozen=True)
class TestResult:
    """One test's outcome before and after the fix."""

    nodeid: str
    before: str | None
    after: str | None
    attempts: int | None
    duration_s: float | None
    log: str
    meaning: str | None = None

    @property
    def change(self) -> str:
        """The runner's meaning, else derived: ``fixed``, ``still_failing``, ``new_failure``..."""
        if self.meaning:
            return self.meaning
        before, after = _kind(self.before), _kind(self.after)
        if after == "fail":
            return "new_failure" if before == "pass" else "still_failing"
        if after == "pass":
            return "fixed" if before == "fail" else "passing"
        return "unknown"


def _kind(outcome: str | None) -> str:
    value = (outcome or "").lower()
    return "pass" if value in PASSING else "fail" if value in FAILING else ""


def _outcome(value: Any) -> tuple[str | None, str]:
    if isinstance(value, Mapping):
        outcome = value.get("outcome") or value.get("status") or value.get("result")
        return (str(outcome) if outcome is not None else None), str(value.get("log") or "")
    return (str(value) if value is not None else None), ""


def _number(value: Any, kind: type[int] | type[float]) -> Any:
    try:
        return kind(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _one(nodeid: str, entry: Any) -> TestResult:
    if not isinstance(entry, Mapping):
        return TestResult(nodeid, None, str(entry), None, None, "")
    before, before_log = _outcome(entry.get("before"))
    after, after_log = _outcome(entry.get("after", entry.get("outcome")))
    log = str(entry.get("log") or "") or "\n".join(part for part in (before_log, after_log) if part)
    duration = entry.get("duration_s", entry.get("duration"))
    attempts = entry.get("attempts", entry.get("runs"))
    meaning = entry.get("meaning")
    return TestResult(
        nodeid,
        before,
        after,
        _number(attempts, int),
        _number(duration, float),
        log,
        str(meaning) if meaning else None,
    )


def _entries(tests: Any) -> Iterable[tuple[str, Any]]:
    if isinstance(tests, Mapping):
        yield from ((str(k), v) for k, v in tests.items())
    elif isinstance(tests, list):
        for index, entry in enumerate(tests):
            if isinstance(entry, Mapping):
                name = next((entry[k] for k in NAME_KEYS if entry.get(k)), f"test {index + 1}")
                yield str(name), entry
            else:
                yield str(entry), {}


def test_results(results: Mapping[str, Any] | None, tests: list[Any] | None) -> list[TestResult]:
    """Every test of a verification with its outcomes; tests not run yet have no outcome."""
    results = results if isinstance(results, Mapping) else {}
    found: dict[str, TestResult] = {}
    if "tests" in results:
        found = {name: _one(name, entry) for name, entry in _entries(results["tests"])}
    elif isinstance(results.get("before"), Mapping) or isinstance(results.get("after"), Mapping):
        before, after = results.get("before") or {}, results.get("after") or {}
        for name in [*before, *(k for k in after if k not in before)]:
            found[str(name)] = _one(
                str(name), {"before": before.get(name), "after": after.get(name)}
            )
    else:
        found = {
            name: _one(name, entry)
            for name, entry in _entries(results)
            if isinstance(entry, Mapping | str)
        }
    for name in tests or []:
        found.setdefault(str(name), TestResult(str(name), None, None, None, None, ""))
    return list(found.values())
