"""Test ids exactly as the runner reruns them, from every runner's output, under every CI.

The logs in tests/fixtures/runner_logs are written by hand from each runner's and each CI's
documented output format (README.md there says what each one shows); every one is read here
with the exact pytest node ids it must give. The verification reruns these ids with pytest.
"""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import pytest

from fixers.classify.failures import JOB, TEST
from fixers.classify.root_causes import classify_report
from fixers.intake import read_report
from fixers.intake.console import read_console

LOGS = Path(__file__).parents[2] / "fixtures" / "runner_logs"

# log → (the CI it is detected as, the runner's report read, {test id: its error's start})
EXPECTED: dict[str, tuple[str | None, str, dict[str | None, str]]] = {
    # pytest 3.10, no short summary: ids from the section titles and the test's own file (not
    # numpy's, the deepest frame); titles too long for 80 columns have a 1-2 `_` rule.
    "travis_pytest3_long.log": (
        "Travis CI",
        "pytest",
        {
            "tests/test_legacy.py": "ImportError: cannot import name 'old_reshape'",
            "tests/test_grid.py::test_resample[nearest-float32-2x2]": "ValueError: cannot",
            "tests/test_grid.py::test_resample[bilinear-float32-2x2]": "ValueError: cannot",
            "tests/test_grid.py::test_resample_preserves_the_halo_cells"
            "[nearest-float64-3x3-with-a-halo-of-two]": "ValueError: cannot",
            "tests/test_halo.py::TestHaloExchange::"
            "test_exchange_matches_the_reference_implementation"
            "[bilinear-float64-3x3-with-a-halo-of-two]": "ValueError: cannot",
        },
    ),
    # pytest 8 -rA under tox: PASSES sections and PASSED lines are no failures, parameter ids
    # hold spaces and ` - `, two files share a test title, a setup error's traceback is all
    # conftest.py, tox's `___ summary ___` is no test.
    "github_pytest8_rA.log": (
        "GitHub Actions",
        "pytest",
        {
            "tests/test_model.py::test_loads_checkpoint[tiny]": "FileNotFoundError: missing",
            "tests/ops/test_add.py::test_op[cpu-2 + 2 = 5]": "AssertionError: assert 4 == 5",
            "tests/ops/test_mul.py::test_op[cpu-2 + 2 = 5]": "AssertionError: assert 4 == 5",
            "tests/test_shapes.py::TestBroadcast::test_shape[3-4 - 1-x]": "ValueError: invalid",
            "tests/test_shapes.py::TestBroadcast::test_shape[5-6 - 1-y]": "ValueError: invalid",
        },
    ),
    # xdist with --tb=native and -rN (no summary): the file from the first CPython frame in
    # the repository, made relative to pytest's rootdir; Buildkite's rendered stamps.
    "buildkite_xdist_native.log": (
        "Buildkite",
        "pytest",
        {
            "tests/kernels/test_rope.py::test_rope[fp16-seq4096]": "RuntimeError: CUDA error",
            "tests/kernels/test_rope.py::test_rope[bf16-seq4096]": "RuntimeError: CUDA error",
            "tests/kernels/test_paged_attention.py::TestPagedAttention::test_decode[bs8]": (
                "AssertionError: Tensor-likes are not close!"
            ),
        },
    ),
    # --tb=line: the ids are the summary's (the crash lines name files only).
    "circleci_tb_line.log": (
        "CircleCI",
        "pytest",
        {
            "tests/test_codec.py::test_roundtrip[little-endian]": "AssertionError: assert b'",
            "tests/test_frames.py::TestFrames::test_truncated_header": "struct.error: unpack",
        },
    ),
    # unittest on Python 3.12: `(pkg.mod.Class.method)`, a sub-test, a setUpClass error (the
    # class), a module the loader could not import (the module).
    "azure_unittest_py312.log": (
        "Azure Pipelines",
        "unittest",
        {
            "tests/test_db.py::DatabaseTests": "KeyError: 'DB_URL'",
            "tests/test_parser.py::ParserTests::test_unicode": "UnicodeEncodeError: 'ascii'",
            "tests/test_cli.py": "ModuleNotFoundError: No module named 'parsekit.cli'",
            "tests/test_parser.py::ParserTests::test_nested": "AssertionError: Lists differ",
        },
    ),
    # nose on Python 2.7: function tests by dotted name, a generator test, `Failure:
    # ImportError (...)` naming the module through its traceback.
    "jenkins_nose.log": (
        "Jenkins",
        "unittest",
        {
            "tests/test_funcs.py::test_haversine": "ValueError: math domain error",
            "tests/test_projection.py": "ImportError: No module named pyproj",
            "tests/test_shapes.py::PolygonTests::test_perimeter": "AssertionError: 3.9999",
            "tests/test_funcs.py::test_bearing": "AssertionError",
        },
    ),
    # nose2: `test_pow:2` parameters, `ModuleImportFailure`; GitLab's checkout path unknown.
    "gitlab_nose2.log": (
        "GitLab CI",
        "unittest",
        {
            "tests/test_math.py::test_sqrt": "ValueError: math domain error",
            "tests/test_broken.py": "ModuleNotFoundError: No module named 'numlib.legacy'",
            "tests/test_math.py::MathTests::test_pow": "AssertionError: 9 != 8",
        },
    ),
    # Django's runner (unittest's printer, Python 3.11 names), `\r\n` ends from Travis' PTY.
    "travis_django.log": (
        "Travis CI",
        "unittest",
        {
            "polls/tests.py::QuestionDetailViewTests::test_detail_view": (
                "django.urls.exceptions.NoReverseMatch"
            ),
            "polls/tests_api.py": "ModuleNotFoundError: No module named 'rest_framework'",
            "polls/tests.py::QuestionModelTests::test_past_question": "AssertionError: True",
        },
    ),
    # Twisted trial: one traceback for two tests, a module that failed to import; a src layout.
    "buildkite_trial.log": (
        "Buildkite",
        "trial",
        {
            "src/wirekit/test/test_framing.py::FramingTests::test_split_header": (
                "twisted.trial.unittest.FailTest"
            ),
            "src/wirekit/test/test_framing.py::FramingTests::test_split_payload": (
                "twisted.trial.unittest.FailTest"
            ),
            "src/wirekit/test/test_tls.py::TLSTests::test_handshake": (
                "builtins.FileNotFoundError"
            ),
            "src/wirekit/test/test_legacy.py": "builtins.ImportError: cannot import name",
        },
    ),
    # teamcity-messages' unittest reporter: ids from `testFailed name='...'`, escapes undone.
    "teamcity_unittest.log": (
        "TeamCity",
        "TeamCity",
        {
            "tests/test_parser.py::ParserTests::test_nested": "AssertionError: Lists differ",
            "tests/test_io.py::IOTests::test_read": (
                "FileNotFoundError: [Errno 2] No such file or directory: 'data/it\\'s.csv'"
            ),
        },
    ),
}
# A job that failed with no failed test: its finding says why, with no test id.
JOB_FAILURES = {
    "travis_flake8.log": ("lint-errors", "specdec/workers/dspark.py:3:1: F401 'os' imported"),
    "github_mypy.log": ("lint-errors", "specdec/interface.py:41: error: Incompatible return"),
    "circleci_no_tests.log": ("no-tests-ran", "48 deselected in 0.21s"),
    "buildkite_disk_full.log": ("disk-full", "ERROR: Could not install packages due to an"),
}
_BAD_ID = re.compile(r"[\x00-\x1f\x7f]|^summary$|site-packages|dist-packages|lib/python")


def _read(name: str):
    return read_report(io.BytesIO((LOGS / name).read_bytes()))


def test_every_fixture_log_is_checked():
    assert {p.name for p in LOGS.glob("*.log")} == set(EXPECTED) | set(JOB_FAILURES)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_runner_gives_exactly_the_ids_it_would_rerun(name):
    ci, runner, expected = EXPECTED[name]
    report = _read(name)
    got = {f.test_id: f.error_text for f in report.failures}
    assert set(got) == set(expected)
    assert len(report.failures) == len(expected)  # every variant once, no duplicates
    for test_id, error in expected.items():
        assert got[test_id].startswith(error), (test_id, got[test_id])
    assert f"test reports read: {runner}" in report.notes
    assert any(note.startswith(f"log format: {ci}") for note in report.notes), report.notes
    for test_id in got:
        assert test_id and not _BAD_ID.search(test_id), test_id
        assert not test_id.startswith("/"), test_id


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_failed_test_is_named_in_its_finding(name):
    findings = classify_report(_read(name))
    named = sorted(t for f in findings for t in f.tests)
    assert named == sorted(t for t in EXPECTED[name][2] if t)
    assert all(f.kind == TEST for f in findings)


@pytest.mark.parametrize("name", sorted(JOB_FAILURES))
def test_a_job_failed_by_no_test_says_so_with_no_test_id(name):
    signature, message = JOB_FAILURES[name]
    report = _read(name)
    assert [f.test_id for f in report.failures] == [None]
    (finding,) = classify_report(report)
    assert (finding.signature, finding.kind, finding.tests) == (signature, JOB, [])
    assert finding.message.startswith(message), finding.message


def test_the_travis_stage_and_unittest_blocks_keep_the_jenkins_stage():
    report = _read("jenkins_nose.log")
    assert {f.stage for f in report.failures} == {"Unit tests"}


def _pytest_session(sections: list[tuple[str, str]], *, summary: bool, width: int = 80) -> str:
    """A pytest report with each (title, error) as a section, laid out as pytest lays it out
    at ``width`` columns (the rule around a long title shrinks to one ``_``)."""

    def rule(char: str, title: str) -> str:
        fill = char * max((width - len(title) - 2) // 2, 1)
        line = f"{fill} {title} {fill}"
        return line + char if len(line) + 1 <= width else line

    out = [rule("=", "test session starts"), "rootdir: /src", "", rule("=", "FAILURES")]
    for title, error in sections:
        out += [rule("_", title), "", "    def test(case):", ">       run(case)", ""]
        out += ["tests/test_kernels.py:12: ", "_ " * 20, "", "    def run(case):"]
        out += [f"E       {error}", "", "/usr/lib/python3/dist-packages/kern/run.py:4: Error"]
    if summary:
        out.append(rule("=", "short test summary info"))
        out += [f"FAILED tests/test_kernels.py::{title} - {error}" for title, error in sections]
    out.append(rule("=", f"{len(sections)} failed in 1.00s"))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("summary", [True, False], ids=["summary", "no-summary"])
@pytest.mark.parametrize("count", [9, 50])
def test_every_parametrized_variant_sharing_one_error_is_named(count, summary):
    """The known bug: 4 of 9 and 43 of 50 variants named when they shared one message."""
    titles = [
        f"test_paged_decode[{dtype}-bs{bs}-{'with-a-long-sliding-window' * (bs % 3)}]"
        for dtype, bs in zip(["fp16", "bf16", "fp32"] * 20, range(count), strict=False)
    ]
    log = _pytest_session([(t, "RuntimeError: no kernel image") for t in titles], summary=summary)
    report = read_report(io.BytesIO(log.encode()))
    want = sorted(f"tests/test_kernels.py::{t}" for t in titles)
    assert sorted(f.test_id or "" for f in report.failures) == want
    (finding,) = classify_report(report)
    assert finding.tests == want


def test_tb_line_without_a_summary_names_the_test_module():
    log = (
        "=================================== FAILURES ===================================\n"
        "/src/tests/test_codec.py:19: AssertionError: assert 0 == 1\n"
        "/src/.venv/lib/python3.12/site-packages/codec/frames.py:88: struct.error: unpack\n"
        "============================== 2 failed in 0.42s ===============================\n"
    )
    header = "=" * 29 + " test session starts " + "=" * 30 + "\nrootdir: /src\n"
    report = read_report(io.BytesIO((header + log).encode()))
    assert [(f.test_id, f.error_text) for f in report.failures] == [
        ("tests/test_codec.py", "AssertionError: assert 0 == 1"),
        (None, "struct.error: unpack"),  # crashed in a library: its test is not printed
    ]


def test_pytest_quiet_no_tests_ran_is_the_jobs_failure():
    log = b"ERROR: file or directory not found: tests/test_gone.py\n\nno tests ran in 0.01s\n"
    (finding,) = classify_report(read_report(io.BytesIO(log)))
    assert (finding.signature, finding.kind, finding.message) == (
        "no-tests-ran",
        JOB,
        "no tests ran in 0.01s",
    )


def test_no_tests_ran_is_no_finding_when_a_test_failed():
    log = (
        b"FAILED tests/test_a.py::test_x - assert 0\n"
        b"============================ no tests ran in 0.01s =============================\n"
    )
    findings = classify_report(read_report(io.BytesIO(log)))
    assert [(f.signature, f.tests) for f in findings] == [
        ("unclassified", ["tests/test_a.py::test_x"])
    ]


def test_ids_carry_no_escape_sequence_or_carriage_return():
    log = (
        b"\x1b[31mFAILED\x1b[0m tests/test_a.py::\x1b[1mtest_x[a]\x1b[0m - boom\r\n"
        b"progress 50%\rFAILED tests/test_b.py::test_y\r\n"
        b"\x1b[32m[gw3]\x1b[0m [ 50%] FAILED tests/test_c.py::test_z[p q] \r\n"
    )
    ids = [f.test_id for f in read_report(io.BytesIO(log)).failures]
    assert ids == [
        "tests/test_a.py::test_x[a]",
        "tests/test_b.py::test_y",
        "tests/test_c.py::test_z[p q]",
    ]


@pytest.mark.parametrize("chunk", [1, 97, 4096])
def test_runner_blocks_do_not_depend_on_chunk_boundaries(chunk):
    for name in ("azure_unittest_py312.log", "buildkite_trial.log", "travis_django.log"):
        data = (LOGS / name).read_bytes()
        whole = read_console([data]).failures
        pieces = [data[i : i + chunk] for i in range(0, len(data), chunk)]
        assert read_console(pieces).failures == whole, name


@pytest.mark.parametrize(
    "line",
    [
        "x.py" + "::a" * 5000 + "[ q",  # a verbose line that never ends in FAILED
        "FAILED x" + "[a - " * 50_000,
        "_ " + "a _" * 50_000 + "x",
        "##teamcity[testFailed name='" + "|0x0041" * 50_000,
        "##teamcity[testFailed " + "a='b' " * 50_000,
        "a.py" * 50_000 + ":1",
        "FAIL: test_y (" + "a." * 50_000 + "(",
    ],
    ids=["verbose", "summary", "section", "teamcity", "teamcity-attributes", "lint", "unittest"],
)
def test_hostile_lines_are_read_in_linear_time(line):
    """Patterns with nested repetition backtrack exponentially; none of these may."""
    log = f"{'=' * 70}\n{line}\n{'=' * 79}\n[FAIL]\n{line}\n{line}\n".encode()
    started = time.perf_counter()
    read_report(io.BytesIO(log))
    assert time.perf_counter() - started < 5
