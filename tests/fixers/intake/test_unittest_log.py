"""unittest, nose, nose2, Django and trial names → pytest node ids (whole logs: test_console_runners)."""

from __future__ import annotations

import pytest

from fixers.intake.unittest_log import trial_failures, unittest_test_id


@pytest.mark.parametrize(
    ("description", "trace", "test_id"),
    [
        ("test_y (pkg.test_m.TestC)", "", "pkg/test_m.py::TestC::test_y"),  # Python <= 3.10
        ("test_y (pkg.test_m.TestC.test_y)", "", "pkg/test_m.py::TestC::test_y"),  # 3.11+
        ("test_y (pkg.test_m.TestC.test_y) (i=1)", "", "pkg/test_m.py::TestC::test_y"),
        ("test_y (pkg.test_m.TestC) [label] (i=1)", "", "pkg/test_m.py::TestC::test_y"),
        ("test_pow:2 (tests.test_m.MathTests)", "", "tests/test_m.py::MathTests::test_pow"),
        ("setUpClass (pkg.test_m.TestC)", "", "pkg/test_m.py::TestC"),
        ("setUpModule (pkg.test_m)", "", "pkg/test_m.py"),
        ("test_m (unittest.loader._FailedTest)", "", "test_m.py"),
        ("pkg.test_m (unittest.loader._FailedTest.pkg.test_m)", "", "pkg/test_m.py"),
        ("tests.test_m (nose2.loader.ModuleImportFailure)", "", "tests/test_m.py"),
        ("tests.test_m.test_f", "", "tests/test_m.py::test_f"),
        ("tests.test_m.test_gen(1, 2)", "", "tests/test_m.py::test_gen"),
        (
            "Failure: ImportError (No module named x)",
            '  File "/usr/lib/python2.7/dist-packages/nose/loader.py", line 1, in load\n'
            '  File "/home/travis/build/a/b/tests/test_m.py", line 2, in <module>\n',
            "tests/test_m.py",
        ),
        ("Failure: ImportError (No module named x)", "", None),  # no frame: no module known
        ("Doctest: pkg.mod.func", "", None),
    ],
)
def test_unittest_nose_and_django_names(description, trace, test_id):
    assert unittest_test_id(description, trace) == test_id


def test_trial_names_every_test_after_one_traceback():
    block = (
        "[FAIL]\nTraceback (most recent call last):\n"
        '  File "/src/pkg/test/test_a.py", line 3, in test_x\n'
        "twisted.trial.unittest.FailTest: no\n\npkg.test.test_a.ATests.test_x\n"
        "pkg.test.test_a.ATests.test_y\n"
    )
    failures = trial_failures(block)
    assert [f.test_id for f in failures] == [
        "pkg/test/test_a.py::ATests::test_x",
        "pkg/test/test_a.py::ATests::test_y",
    ]
    assert {f.error for f in failures} == {"twisted.trial.unittest.FailTest: no"}
