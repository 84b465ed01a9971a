"""Test ids as pytest reruns them: cleaned, made relative, built from dotted names and frames."""

from __future__ import annotations

import pytest

from fixers.intake.testids import (
    clean_test_id,
    dotted_test_id,
    node_id,
    own_test_file,
    repo_relative,
)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("tests/a.py::t\r", "tests/a.py::t"),
        ("\x1b[1mtests/a.py::t\x1b[0m", "tests/a.py::t"),
        ("tests/a.py::t[\x07a]", "tests/a.py::t[a]"),
        ("\r\x1b[0K", None),
        (None, None),
    ],
)
def test_ids_lose_escapes_and_control_characters(raw, clean):
    assert clean_test_id(raw) == clean


def test_the_tests_own_file_is_never_a_library_or_a_conftest():
    trace = (
        "tests/conftest.py:5: in fixture\n"
        "tests/test_grid.py:41: \n"
        "gridkit/grid.py:88: in resample\n"
        "/venv/lib/python3.12/site-packages/numpy/core/fromnumeric.py:279: ValueError\n"
    )
    assert own_test_file(trace) == "tests/test_grid.py"
    assert own_test_file("/usr/lib/python3.12/site-packages/x.py:1: in f\n") is None
    native = '  File "/ci/src/tests/test_a.py", line 3, in test_a\n'
    assert own_test_file(native, "/ci/src") == "tests/test_a.py"
    assert own_test_file(native) == "tests/test_a.py"  # no rootdir: cut at the test directory


@pytest.mark.parametrize(
    ("path", "relative"),
    [
        ("/home/travis/build/acme/kit/tests/t.py", "tests/t.py"),
        ("/home/runner/work/kit/kit/tests/t.py", "tests/t.py"),
        ("/__w/kit/kit/tests/t.py", "tests/t.py"),
        ("/home/vsts/work/1/s/tests/t.py", "tests/t.py"),
        ("/home/circleci/project/tests/t.py", "tests/t.py"),
        ("/var/lib/buildkite-agent/builds/agent-1/acme/kit/tests/t.py", "tests/t.py"),
        ("/var/lib/jenkins/workspace/kit@2/tests/t.py", "tests/t.py"),
        ("/opt/buildagent/work/7c1d9e2fa3b4c5d6/tests/t.py", "tests/t.py"),
        ("/elsewhere/tests/t.py", "/elsewhere/tests/t.py"),
        ("tests/t.py", "tests/t.py"),
    ],
)
def test_ci_checkout_directories_are_removed(path, relative):
    assert repo_relative(path) == relative


@pytest.mark.parametrize(
    ("dotted", "files", "module_only", "test_id"),
    [
        ("pkg.test_x.TestC.test_y", [], False, "pkg/test_x.py::TestC::test_y"),
        ("pkg.test_x.test_f", [], False, "pkg/test_x.py::test_f"),
        (
            "pkg.test_x.TestC.test_y",
            ["src/pkg/test_x.py"],
            False,
            "src/pkg/test_x.py::TestC::test_y",
        ),
        (
            "pkg.test_x.TestC.test_y",
            ["/abs/src/pkg/test_x.py"],
            False,
            "pkg/test_x.py::TestC::test_y",
        ),
        ("pkg.test_x", [], True, "pkg/test_x.py"),
        ("pkg.tests", ["pkg/tests.py"], False, "pkg/tests.py"),  # Django's app.tests module
    ],
)
def test_dotted_names_become_node_ids(dotted, files, module_only, test_id):
    assert dotted_test_id(dotted, files, module_only=module_only) == test_id


def test_junit_ids_unchanged():
    assert node_id("tests.test_x.TestC", "test_y[a.b]") == "tests/test_x.py::TestC::test_y[a.b]"
    assert node_id("", "tests.test_x") == "tests/test_x.py"
