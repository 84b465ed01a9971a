"""TeamCity service messages: ``##teamcity[testFailed name='...' message='...' details='...']``.

A build step reports its tests to TeamCity by printing service messages on its output
(JetBrains' ``teamcity-messages`` does it for pytest, unittest, nose and Django). Each is one
line: a message name, then ``attribute='value'`` pairs whose values escape ``|`` as ``||``,
``'`` as ``|'``, ``[`` and ``]`` as ``|[`` and ``|]``, line breaks as ``|n`` and ``|r``, and
other characters as ``|0xNNNN``. ``testFailed`` names the failed test, so the test id comes from
the message itself; ``buildProblem`` describes a failure of the build that is no test's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fixers.classify.failures import Failure
from fixers.intake.lines import clean_block
from fixers.intake.stages import gpu_type_of
from fixers.intake.testids import (
    clean_test_id,
    dotted_test_id,
    is_dotted_name,
    repository_files,
    teamcity_name,
)
from fixers.intake.tracebacks import pytest_error_text

_MESSAGE = re.compile(
    r"##teamcity\[(?P<name>[A-Za-z]+)(?P<attributes>(?:\s+[\w.\-]+='(?:[^'|]|\|.)*')*)\s*\]"
)
_ATTRIBUTE = re.compile(r"(?P<key>[\w.\-]+)='(?P<value>(?:[^'|]|\|.)*)'")
_ESCAPE = re.compile(r"\|(0x[0-9a-fA-F]{4}|.)")
_ESCAPES = {"n": "\n", "r": "\r", "'": "'", "|": "|", "[": "[", "]": "]", "x": "\u0085"}
_ESCAPES |= {"l": "\u2028", "p": "\u2029"}
# What teamcity-messages appends to a test's name: a collection error, a failed teardown.
_SUFFIXES = ("_collect", "_teardown")
_PARAMS = re.compile(r"^(?P<name>[^(]+)\((?P<params>.*)\)$")
# teamcity-messages' default `message` for a failed pytest test: its location,
# `tests/test_x.py:11 (TestC.test_y[1.5])`, whose title keeps the parameters' dots.
_LOCATION = re.compile(r"^(?P<path>[^\s:]+\.py):\d+ \((?P<title>[^\s\[]+(?:\[.*\])?)\)$")


@dataclass(frozen=True)
class ServiceMessage:
    """One ``##teamcity[name key='value' ...]`` message, its values unescaped."""

    name: str
    attributes: dict[str, str]


def unescape(value: str) -> str:
    """A service message value as it was before TeamCity's ``|`` escaping."""

    def one(match: re.Match[str]) -> str:
        code = match[1]
        if code.startswith("0x"):
            return chr(int(code[2:], 16))
        return _ESCAPES.get(code, code)

    return _ESCAPE.sub(one, value)


def parse_message(line: str) -> ServiceMessage | None:
    """The service message on ``line``, or None when it holds none."""
    match = _MESSAGE.search(line)
    if match is None:
        return None
    attributes = {
        found["key"]: unescape(found["value"]) for found in _ATTRIBUTE.finditer(match["attributes"])
    }
    return ServiceMessage(match["name"], attributes)


def teamcity_test_id(
    name: str, details: str = "", rootdir: str | None = None, message: str = ""
) -> str | None:
    """The pytest node id of a test TeamCity names.

    A node id (``tests/test_x.py::test_y``) is kept as it is. The dotted names of
    teamcity-messages (``tests.test_x.TestC.test_y(a-b)``) are mapped to the file the failure's
    traceback names: ``tests/test_x.py::TestC::test_y[a-b]``; ``..._collect`` is the module's
    collection error (``tests.test_x.top_level_collect`` → ``tests/test_x.py``). The plugin
    writes ``_`` for every ``.`` of a parameter; the exact id comes from the failure's
    ``message`` when that is the plugin's location (``tests/test_x.py:11 (test_y[1.5])``) and
    names the same test, else the parameters are as TeamCity shows them.
    """
    name = clean_test_id(name) or ""
    if not name:
        return None
    if "::" in name or name.endswith(".py"):
        return name
    if located := _LOCATION.match(message.strip()):
        title, bracket, params = located["title"].partition("[")
        candidate = "::".join([located["path"], *title.split(".")]) + bracket + params
        if teamcity_name(candidate) == name:
            return candidate
    module_only = False
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            module_only = suffix == "_collect"
    params = ""
    if found := _PARAMS.match(name):
        name, params = found["name"], f"[{found['params']}]"
    if name.endswith(".top_level"):
        name, module_only = name[: -len(".top_level")], True
    if not is_dotted_name(name):
        return None
    test_id = dotted_test_id(name, repository_files(details, rootdir), module_only=module_only)
    return test_id + params if "::" in test_id else test_id


def test_failure(
    message: ServiceMessage, stage: str | None, log_line: str, rootdir: str | None = None
) -> Failure:
    """The failure a ``testFailed`` message reports: its test, its error, its details."""
    values = message.attributes
    details = clean_block(values.get("details", ""))
    text = values.get("message", "")
    return Failure(
        teamcity_test_id(values.get("name", ""), details, rootdir, text),
        pytest_error_text(details) or text,
        stack_trace=details,
        stage=stage,
        gpu_type=gpu_type_of(stage),
        log_line=log_line,
    )


def not_yet_reported(messages: list[tuple[str, Failure]], reported: list[Failure]) -> list[Failure]:
    """TeamCity's failed tests (name, failure) that the runner's own report (``reported``) did
    not already name: under TeamCity, pytest prints its report too."""
    named = {f.test_id for f in reported if f.test_id}
    mangled = {teamcity_name(test_id) for test_id in named}
    added = []
    for name, failure in messages:
        if failure.test_id not in named and name not in mangled:
            added.append(failure)
            if failure.test_id:
                named.add(failure.test_id)
    return added
