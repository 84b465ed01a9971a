"""TeamCity service messages: parsed, unescaped, their test names made pytest node ids."""

from __future__ import annotations

import pytest

from fixers.intake.teamcity import parse_message, teamcity_test_id, unescape
from fixers.intake.testids import teamcity_name


def test_teamcity_values_are_unescaped():
    assert unescape("a|'b|'|n|[x|]||y|0x00e9|r") == "a'b'\n[x]|y\u00e9\r"
    message = parse_message(
        "2026-07-30 ##teamcity[testFailed name='t|'s' message='m|]' details='d|n' flowId='1']"
    )
    assert message is not None and message.name == "testFailed"
    assert message.attributes == {"name": "t's", "message": "m]", "details": "d\n", "flowId": "1"}
    assert parse_message("no message here") is None


@pytest.mark.parametrize(
    ("name", "details", "message", "test_id"),
    [
        ("tests/test_a.py::TestC::test_y[x]", "", "", "tests/test_a.py::TestC::test_y[x]"),
        ("tests.test_a.TestC.test_y", "", "", "tests/test_a.py::TestC::test_y"),
        (
            "tests.test_a.test_y(1_5-a)",
            "tests/test_a.py:3: in test_y",
            "",
            "tests/test_a.py::test_y[1_5-a]",
        ),
        # The plugin's location message keeps the parameters' dots.
        (
            "tests.test_a.test_y(1_5-a)",
            "",
            "tests/test_a.py:3 (test_y[1.5-a])",
            "tests/test_a.py::test_y[1.5-a]",
        ),
        # A message naming another test is not believed.
        (
            "tests.test_a.test_y(1_5)",
            "",
            "tests/test_b.py:3 (test_z[1.5])",
            "tests/test_a.py::test_y[1_5]",
        ),
        ("tests.test_a.top_level_collect", "", "", "tests/test_a.py"),
        ("tests.test_a.TestC.test_y_teardown", "", "", "tests/test_a.py::TestC::test_y"),
        (
            "tests.test_a.TestC.test_y",
            '  File "/opt/buildagent/work/0a1b2c3d/src/tests/test_a.py", line 1, in test_y\n',
            "",
            "src/tests/test_a.py::TestC::test_y",
        ),
        ("", "", "", None),
        ("not a test name!", "", "", None),
    ],
)
def test_teamcity_names(name, details, message, test_id):
    assert teamcity_test_id(name, details, message=message) == test_id


@pytest.mark.parametrize(
    "test_id",
    ["tests/test_a.py::TestC::test_y[1.5-a]", "tests/test_a.py", "tests/sub/test_b.py::test_z"],
)
def test_a_node_id_and_its_teamcity_name_name_the_same_test(test_id):
    assert teamcity_test_id(teamcity_name(test_id), message="") in (
        test_id,
        test_id.replace("1.5", "1_5"),
    )
