"""Line prefixes of every common CI: detected per log, stripped before matching, kept as evidence.

The fixture logs (tests/fixtures/ci_logs, written by its make.py) print one pytest run the way
each CI's raw job log does; every one must give the same two findings as the bare run.
"""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import pytest

from fixers.classify.findings_json import finding_to_dict
from fixers.classify.root_causes import classify_report
from fixers.intake import read_report
from fixers.intake.lines import clean_line
from fixers.intake.prefixes import Dialect, detect_dialects

LOGS = Path(__file__).parents[2] / "fixtures" / "ci_logs"
EXPECTED = {
    ("abstract-method-missing", ("tests/test_stub.py::test_stub",)),
    ("contract-forward-override", ("tests/test_workers.py",)),
}


def _findings(data: bytes):
    report = read_report(io.BytesIO(data))
    return report, [finding_to_dict(f) for f in classify_report(report)]


@pytest.mark.parametrize(
    ("log", "dialects", "stage", "evidence_prefix"),
    [
        ("github_actions.log", [Dialect.GITHUB_ACTIONS], None, "2026-07-30T10:55:"),
        ("azure.log", [Dialect.AZURE], None, "2026-07-30T10:55:"),
        ("azure_commands.log", [Dialect.AZURE], None, "2026-07-30T10:55:"),
        ("travis.log", [Dialect.TRAVIS], None, "____"),
        ("circleci.log", [Dialect.CIRCLECI], None, "____"),
        ("buildkite_rendered.log", [Dialect.BUILDKITE], None, "[2026-07-30T10:55:"),
        ("teamcity.log", [Dialect.TEAMCITY], None, "____"),
        ("gitlab.log", [Dialect.GITLAB], None, "____"),
        ("gitlab_timestamps.log", [Dialect.GITLAB], None, "2026-07-30T10:55:"),
        ("buildkite.log", [Dialect.BUILDKITE], None, "\x1b_bk;t=17223369"),
        ("jenkins_iso.log", [Dialect.JENKINS], None, "[2026-07-30T10:55:"),
        ("jenkins_clock.log", [], None, "10:55:"),
        ("jenkins_elapsed.log", [], None, "00:00:"),
        ("jenkins_parallel.log", [Dialect.JENKINS], "unit tests", "[2026-07-30T10:55:"),
        ("mixed_nested.log", [Dialect.JENKINS], "H100_PCIe-PyTorch-1", "[2026-07-30T10:55:"),
    ],
)
def test_every_ci_format_gives_the_findings_of_the_bare_run(log, dialects, stage, evidence_prefix):
    report, findings = _findings((LOGS / log).read_bytes())
    assert {(f["signature"], tuple(f["tests"])) for f in findings} == EXPECTED
    assert report.format.value == "console"
    names = ", ".join(dialects)
    assert [n for n in report.notes if n.startswith("log format")] == (
        [f"log format: {names} (line prefixes removed before matching)"] if dialects else []
    )
    for finding in findings:
        assert finding["stages"] == ([stage] if stage else [])
        assert finding["log_line"].startswith(evidence_prefix), finding["log_line"]
        # What was matched and shown as the message carries no prefix at all.
        assert not finding["message"].startswith(("20", "[", "\x1b", "#"))


def test_the_fixtures_are_what_make_py_writes():
    spec = importlib.util.spec_from_file_location("make_ci_logs", LOGS / "make.py")
    assert spec and spec.loader
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    lines = make.PYTEST.splitlines()
    for name, write in make.WRITERS.items():
        assert (LOGS / name).read_bytes() == write(lines), f"rerun make.py: {name} is stale"


@pytest.mark.parametrize(
    ("raw", "text", "prefix", "branch", "command"),
    [
        # GitHub Actions: BOM on the first line, 7-digit fractions, log commands.
        (
            "\ufeff2026-07-30T10:55:18.2470097Z FAILED t.py::x",
            "FAILED t.py::x",
            "2026-07-30T10:55:18.2470097Z",
            None,
            None,
        ),
        (
            "2026-07-30T10:55:18.2470097Z ##[group]Run pytest",
            "Run pytest",
            "2026-07-30T10:55:18.2470097Z ##[group]",
            None,
            "group",
        ),
        (
            "2026-07-30T10:55:18Z ##[endgroup]",
            "",
            "2026-07-30T10:55:18Z ##[endgroup]",
            None,
            "endgroup",
        ),
        (
            "2026-07-30T10:55:18.1Z ##[error]Process completed with exit code 1.",
            "Process completed with exit code 1.",
            "2026-07-30T10:55:18.1Z ##[error]",
            None,
            "error",
        ),
        (
            "2026-07-30T10:55:18.1Z ##[warning]Node.js 16 actions are deprecated.",
            "Node.js 16 actions are deprecated.",
            "2026-07-30T10:55:18.1Z ##[warning]",
            None,
            "warning",
        ),
        # `gh run view --log`: job and step names, tab-separated, first.
        (
            "test (3.12)\tRun pytest\t2026-07-30T10:55:18.2470097Z FAILED t.py::x",
            "FAILED t.py::x",
            "test (3.12)\tRun pytest\t2026-07-30T10:55:18.2470097Z",
            None,
            None,
        ),
        # Azure Pipelines.
        (
            "2026-07-30T10:55:18.1234567Z ##[section]Starting: pytest",
            "Starting: pytest",
            "2026-07-30T10:55:18.1234567Z ##[section]",
            None,
            "section",
        ),
        # GitLab: section markers with their \r\x1b[0K, ANSI, and per-line timestamps.
        (
            "section_start:1722336920:step_script\r\x1b[0K\x1b[32;1mExecuting\x1b[0;m",
            "Executing",
            "",
            None,
            None,
        ),
        ("section_end:1722336921:step_script\r\x1b[0K", "", "", None, None),
        (
            "section_start:1722336920:tests[collapsed=true]\r\x1b[0KE   TypeError: x",
            "E   TypeError: x",
            "",
            None,
            None,
        ),
        (
            "2026-07-30T10:55:18.290545Z 00O E   TypeError: x",
            "E   TypeError: x",
            "2026-07-30T10:55:18.290545Z 00O",
            None,
            None,
        ),
        (
            "2026-07-30T10:55:18.290545Z 01E+ytes",
            "ytes",
            "2026-07-30T10:55:18.290545Z 01E+",
            None,
            None,
        ),
        # Buildkite: an APC timestamp escape before each line.
        ("\x1b_bk;t=1722336918000\x07FAILED t.py::x", "FAILED t.py::x", "", None, None),
        ("\x1b_bk;t=1722336918000\x07\x1b[31mERROR t.py\x1b[0m", "ERROR t.py", "", None, None),
        # Jenkins Timestamper: ISO in brackets, date and time, clock, elapsed.
        (
            "[2026-11-29T14:49:57.123Z] FAILED t.py::x",
            "FAILED t.py::x",
            "[2026-11-29T14:49:57.123Z]",
            None,
            None,
        ),
        (
            "[2026-11-29 14:49:57] FAILED t.py::x",
            "FAILED t.py::x",
            "[2026-11-29 14:49:57]",
            None,
            None,
        ),
        (
            "2026-11-29 14:49:57.5 FAILED t.py::x",
            "FAILED t.py::x",
            "2026-11-29 14:49:57.5",
            None,
            None,
        ),
        ("14:49:57 FAILED t.py::x", "FAILED t.py::x", "14:49:57", None, None),
        ("[14:49:57] FAILED t.py::x", "FAILED t.py::x", "[14:49:57]", None, None),
        ("00:01:02.345 FAILED t.py::x", "FAILED t.py::x", "00:01:02.345", None, None),
        ("123:01:02.345 FAILED t.py::x", "FAILED t.py::x", "123:01:02.345", None, None),
        # Jenkins parallel branches: a stage name is one; other names only when learned.
        (
            "[A10-PyTorch-1] FAILED t.py::x",
            "FAILED t.py::x",
            "[A10-PyTorch-1]",
            "A10-PyTorch-1",
            None,
        ),
        ("[unit tests] FAILED t.py::x", "[unit tests] FAILED t.py::x", "", None, None),
        # Nested and mixed: Jenkins ISO, branch, Actions ISO, ANSI, xdist.
        (
            "[2026-11-29T14:49:57Z] [H100_PCIe-PyTorch-1] 2026-07-30T10:55:18.2470097Z \x1b[31m[gw1] [ 42%] FAILED t.py::x",
            "FAILED t.py::x",
            "[2026-11-29T14:49:57Z] [H100_PCIe-PyTorch-1] 2026-07-30T10:55:18.2470097Z",
            "H100_PCIe-PyTorch-1",
            None,
        ),
        (
            "\x1b_bk;t=1\x07[2026-11-29T14:49:57Z] 10:00:00 ERROR t.py",
            "ERROR t.py",
            "[2026-11-29T14:49:57Z] 10:00:00",
            None,
            None,
        ),
        # Travis CI: fold and time markers with their `\r\x1b[0K`, on the line they open.
        (
            "travis_fold:start:install.1\r\x1b[0Ktravis_time:start:0a1b\r\x1b[0K$ pip install x",
            "$ pip install x",
            "",
            None,
            None,
        ),
        (
            "travis_time:end:0a1b:start=1,finish=2,duration=1,event=script\r\x1b[0K"
            '\x1b[31;1mThe command "pytest" exited with 1.\x1b[0m',
            'The command "pytest" exited with 1.',
            "",
            None,
            None,
        ),
        # A line rewritten with `\r` (a progress bar): what the terminal shows last.
        ("  50% |####   |\r 100% |########|\rFAILED t.py::x\r", "FAILED t.py::x", "", None, None),
        # Azure's logging commands: an error issue counts as an error line.
        (
            "2026-07-30T10:55:18.1Z ##vso[task.logissue type=error;sourcepath=a.py]lint failed",
            "lint failed",
            "2026-07-30T10:55:18.1Z ##vso[task.logissue type=error;sourcepath=a.py]",
            None,
            "error",
        ),
        (
            "##vso[task.setvariable variable=X]1",
            "1",
            "##vso[task.setvariable variable=X]",
            None,
            "vso",
        ),
        # A downloaded TeamCity build log's stamp and step.
        (
            "[10:55:18]i:\t [Step 1/2] FAILED t.py::x",
            "FAILED t.py::x",
            "[10:55:18]i:\t [Step 1/2]",
            None,
            None,
        ),
        # Buildkite's rendered stamp is the same bracketed ISO time Jenkins' Timestamper writes.
        (
            "[2026-07-30T10:55:18Z] FAILED t.py::x",
            "FAILED t.py::x",
            "[2026-07-30T10:55:18Z]",
            None,
            None,
        ),
        # Not prefixes: text that merely starts with a digit or a bracket stays as it is.
        ("12 passed in 0.1s", "12 passed in 0.1s", "", None, None),
        ("[not-a-stage] hello", "[not-a-stage] hello", "", None, None),
        (
            "    indented source stays indented   ",
            "    indented source stays indented",
            "",
            None,
            None,
        ),
    ],
)
def test_strip_prefixes(raw, text, prefix, branch, command):
    cleaned = clean_line(raw)
    assert (cleaned.text, cleaned.prefix, cleaned.branch_stage, cleaned.command) == (
        text,
        prefix,
        branch,
        command,
    )


def test_a_learned_branch_name_is_a_prefix():
    cleaned = clean_line("[unit tests] FAILED t.py::x", {"unit tests"})
    assert (cleaned.text, cleaned.branch_stage) == ("FAILED t.py::x", "unit tests")


@pytest.mark.parametrize(
    ("sample", "dialects"),
    [
        (
            b"\xef\xbb\xbf2026-07-30T10:55:18.2470097Z Current runner version: '2.317.0'\n",
            [Dialect.GITHUB_ACTIONS],
        ),
        (b"2026-07-30T10:55:18.1Z ##[section]Starting: Initialize job\n", [Dialect.AZURE]),
        (b"section_start:1722336920:step_script\r\x1b[0KExecuting\n", [Dialect.GITLAB]),
        (b"2026-07-30T10:55:18.290545Z 00O Running with gitlab-runner\n", [Dialect.GITLAB]),
        (b"\x1b_bk;t=1722336918000\x07~~~ Preparing\n", [Dialect.BUILDKITE]),
        (b"Started by user admin\n[Pipeline] Start of Pipeline\n", [Dialect.JENKINS]),
        (b"[2026-11-29T14:49:57.123Z] + pytest\n", [Dialect.JENKINS]),
        (b"============ test session starts ============\n", []),
        (b"travis_fold:start:install\r\x1b[0K$ pip install x\n", [Dialect.TRAVIS]),
        (b"#!/bin/bash -eo pipefail\npytest\n", [Dialect.CIRCLECI]),
        (b"pytest\n\nExited with code exit status 1\n", [Dialect.CIRCLECI]),
        (b"2026-07-30T10:55:18.1Z ##vso[task.logissue type=error]x\n", [Dialect.AZURE]),
        (b"##teamcity[testStarted name='t.x']\n", [Dialect.TEAMCITY]),
        (b"[10:55:18]i: TeamCity server version is 2024.07\n", [Dialect.TEAMCITY]),
        # Buildkite's rendered log: the same stamp as Jenkins', but no `[Pipeline]`.
        (b"[2026-07-30T10:55:18Z] ~~~ Preparing working directory\n", [Dialect.BUILDKITE]),
        (
            b"[2026-07-30T10:55:18Z] [Pipeline] sh\n[2026-07-30T10:55:19Z] ~~~ x\n",
            [
                Dialect.BUILDKITE,
                Dialect.JENKINS,
            ],
        ),
        # Line-start markers count on any line of the sample, never in the middle of one.
        (b"Started by user admin\n[2026-11-29T14:49:57.123Z] + pytest\n", [Dialect.JENKINS]),
        (b"Running\n2026-07-30T10:55:18.290545Z 00O x\n", [Dialect.GITLAB]),
        (b"setup\n\xef\xbb\xbf2026-07-30T10:55:18.2470097Z x\n", [Dialect.GITHUB_ACTIONS]),
        (b"at 2026-07-30T10:55:18.2470097Z and [2026-11-29T14:49:57.123Z]\n", []),
    ],
)
def test_detect_dialects(sample, dialects):
    assert detect_dialects(sample) == dialects
    assert detect_dialects(memoryview(bytearray(sample))) == dialects  # the reader's buffer


def test_a_mixed_log_reports_every_ci_it_holds():
    jenkins = b"[Pipeline] sh\n" * 10
    actions = b"2026-07-30T10:55:18.2470097Z ##[group]Run x\n"
    result = read_report(io.BytesIO(jenkins + actions))
    assert "log format: GitHub Actions, Jenkins (line prefixes removed before matching)" in (
        result.notes
    )


def test_the_findings_are_json_ready():
    _, findings = _findings((LOGS / "github_actions.log").read_bytes())
    assert json.loads(json.dumps(findings)) == findings
