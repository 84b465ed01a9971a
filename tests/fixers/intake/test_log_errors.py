"""Never "nothing": a failed run with no test failure still yields one finding; a clean log says so."""

from __future__ import annotations

import io

import pytest

from fixers.classify.root_causes import classify_report
from fixers.intake import read_report
from fixers.intake.lines import clean_line
from fixers.intake.log_errors import NO_FAILURE_NOTE, error_lines, looks_like_error

NPM_FAILURE = b"""\xef\xbb\xbf2026-07-30T10:55:18.0000000Z ##[group]Run npm ci
2026-07-30T10:55:18.1000000Z npm WARN deprecated inflight@1.0.6
2026-07-30T10:55:19.0000000Z npm ERR! code ERESOLVE
2026-07-30T10:55:19.1000000Z npm ERR! ERESOLVE could not resolve
2026-07-30T10:55:19.2000000Z npm ERR! Conflicting peer dependency: react@18.3.1
2026-07-30T10:55:19.3000000Z ##[endgroup]
2026-07-30T10:55:19.4000000Z ##[error]Process completed with exit code 1.
2026-07-30T10:55:19.5000000Z Post job cleanup.
"""
CLEAN_RUN = b"""2026-07-30T10:55:18.0000000Z ##[group]Run pytest
2026-07-30T10:55:19.0000000Z tests/test_errors.py::test_error_handling PASSED
2026-07-30T10:55:19.1000000Z ============ 12 passed, 0 errors in 0.50s ============
2026-07-30T10:55:19.2000000Z flake8: failed=0 errors: 0
2026-07-30T10:55:19.3000000Z ##[endgroup]
2026-07-30T10:55:19.4000000Z Cleaning up orphan processes
"""


def _classify(data: bytes):
    report = read_report(io.BytesIO(data))
    return report, classify_report(report)


def test_a_failed_run_without_a_test_failure_gives_one_unclassified_finding():
    report, findings = _classify(NPM_FAILURE)
    assert len(report.failures) == 1 and len(findings) == 1
    (finding,) = findings
    assert finding.signature == "unclassified" and finding.fixer is None
    # The most specific error line heads it; the runner's generic trailer is evidence only.
    assert finding.message == "npm ERR! Conflicting peer dependency: react@18.3.1"
    assert finding.evidence.splitlines() == [
        "npm ERR! code ERESOLVE",
        "npm ERR! ERESOLVE could not resolve",
        "npm ERR! Conflicting peer dependency: react@18.3.1",
        "Process completed with exit code 1.",
    ]
    assert finding.log_line.startswith("2026-07-30T10:55:19.2000000Z npm ERR! Conflicting")
    assert any("kept as one failure" in note for note in report.notes)


def test_a_log_without_any_failure_says_so():
    report, findings = _classify(CLEAN_RUN)
    assert findings == [] and report.failures == []
    assert NO_FAILURE_NOTE in report.notes


def test_only_the_generic_trailer_is_still_a_finding():
    _report, findings = _classify(
        b"2026-07-30T10:55:19Z ##[error]Process completed with exit code 2.\n"
    )
    assert [f.message for f in findings] == ["Process completed with exit code 2."]


def test_error_lines_far_before_the_end_are_found_through_error_commands():
    head = b"2026-07-30T10:55:18Z ##[error]Unable to resolve action `actions/chekout@v4`\n"
    noise = b"2026-07-30T10:55:18Z compiling module %d\n"
    log = head + b"".join(noise % i for i in range(20_000))
    _report, findings = _classify(log)
    assert [f.message for f in findings] == ["Unable to resolve action `actions/chekout@v4`"]


def test_a_real_failure_suppresses_the_fallback():
    log = NPM_FAILURE + b"2026-07-30T10:55:20Z FAILED tests/test_a.py::test_x - assert 1 == 2\n"
    report, _findings = _classify(log)
    assert [f.test_id for f in report.failures] == ["tests/test_a.py::test_x"]


def test_the_fallback_never_claims_a_contract_signature_for_lookalike_text():
    log = b"2026-07-30T10:55:19Z error: forward() must not be overridden in MyModule\n"
    _, findings = _classify(log)
    assert [f.signature for f in findings] == ["unclassified"]


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("npm ERR! code ERESOLVE", True),
        ("error: linker `cc` not found", True),
        ("Error: Process completed with exit code 1.", True),
        ("make: *** [all] Error 2", True),
        ("FAILED tests/a.py::t", True),
        ("Segmentation fault (core dumped)", True),
        ("The job exceeded the maximum execution time and timed out", True),
        ("exit status 2", True),
        ("==== 3 passed, 0 errors in 1s ====", False),
        ("failed=0", False),
        ("test_error_handling PASSED", False),
        ("no failures", False),
    ],
)
def test_looks_like_error(line, error):
    assert looks_like_error(clean_line(line)) is error


def test_error_lines_keeps_the_last_ones_in_order_without_repeats():
    lines = [clean_line(f"error {i % 3}") for i in range(30)] + [clean_line("all done")]
    assert [line.text for line in error_lines(lines, limit=2)] == ["error 1", "error 2"]
    assert [line.text for line in error_lines(lines)] == ["error 0", "error 1", "error 2"]
