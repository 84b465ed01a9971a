"""Failure reports of unittest and the runners that print like it, and of Twisted trial.

unittest (and nose, nose2 and Django's ``manage.py test``, which use its result printer) writes
each failure after a rule of ``=``::

    ======================================================================
    FAIL: test_y (pkg.test_mod.TestC.test_y)        # Python 3.11+; before: (pkg.test_mod.TestC)
    ----------------------------------------------------------------------
    Traceback (most recent call last):
      File "/src/pkg/test_mod.py", line 9, in test_y
    AssertionError: 1 != 2

nose names a function test by its dotted path (``FAIL: pkg.test_mod.test_f``) and a module it
could not import as ``ERROR: Failure: ImportError (No module named x)``; unittest's loader as
``ERROR: test_mod (unittest.loader._FailedTest)``, nose2's as
``ERROR: pkg.test_mod (nose2.loader.ModuleImportFailure)``.

Twisted trial writes ``[FAIL]`` or ``[ERROR]`` after its rule, then the traceback, then the
dotted names of every test that failed with that traceback, one a line.

Each block is read whole once it ends (the next rule, or ``Ran N tests``); the ids are pytest
node ids (``testids``), the file taken from the traceback when a frame matches the module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fixers.intake.testids import (
    dotted_test_id,
    is_dotted_name,
    own_test_file,
    repository_files,
)
from fixers.intake.tracebacks import last_exception_line

# unittest/nose header; the rule before it is checked by the reader.
UNITTEST_HEADER = re.compile(r"^(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<description>\S.*)$")
TRIAL_HEADER = re.compile(r"^\[(?P<kind>FAIL|ERROR)\]$")
BARE_RULE = re.compile(r"^={40,}$")
RAN_LINE = re.compile(r"^Ran \d+ tests? in ")
_DASHES = re.compile(r"^-{40,}$")
# `test_y (pkg.mod.TestC)`, `test_y (pkg.mod.TestC.test_y)`, `test_y:2 (pkg.mod.TestC)` (nose2
# parameters), then an optional sub-test part: ` [message]`, ` (i=1)`.
_METHOD = re.compile(
    r"^(?P<method>[A-Za-z_][\w.]*)(?::\d+)? \((?P<path>[A-Za-z_][\w.]*)\)(?: \[.*\])?(?: \(.*\))?$"
)
# nose's and nose2's function tests: `pkg.mod.test_f`, `pkg.mod.test_gen(1, 2)`, `pkg.mod.test_p:1`.
_FUNCTION = re.compile(r"^(?P<path>[A-Za-z_][\w.]*)(?:\(.*\)|:\d+)?$")
_NOSE_FAILURE = re.compile(r"^Failure: \w+ \(.*\)$")
_LOADER_FAILURES = ("_FailedTest", "ModuleImportFailure", "LoadTestsFailure", "_ErrorHolder")
_CLASS_FIXTURES = ("setUpClass", "tearDownClass")
_MODULE_FIXTURES = ("setUpModule", "tearDownModule")


def runner_of(header: str) -> str | None:
    """``unittest`` or ``trial`` for the header of such a failure block, else None."""
    if UNITTEST_HEADER.match(header):
        return "unittest"
    return "trial" if TRIAL_HEADER.match(header) else None


@dataclass(frozen=True)
class RunnerFailure:
    """One failed test (or module) of a unittest-style or trial report."""

    test_id: str | None
    error: str
    trace: str


def unittest_failure(block: str, rootdir: str | None = None) -> RunnerFailure | None:
    """The failure a unittest-style block reports (its ``FAIL:`` header first, after the rule)."""
    lines = _without_rule(block.splitlines())
    if not lines or not (header := UNITTEST_HEADER.match(lines[0].strip())):
        return None
    trace = _trace(lines[1:])
    test_id = unittest_test_id(header["description"], trace, rootdir)
    exception = last_exception_line(trace)
    error = str(exception) if exception else _last_line(trace) or header["description"]
    return RunnerFailure(test_id, error, trace)


def unittest_test_id(description: str, trace: str = "", rootdir: str | None = None) -> str | None:
    """The pytest node id of a unittest/nose/nose2/Django header's description.

    >>> unittest_test_id("test_y (pkg.test_mod.TestC)")
    'pkg/test_mod.py::TestC::test_y'
    >>> unittest_test_id("test_y (pkg.test_mod.TestC.test_y) (i=1)")
    'pkg/test_mod.py::TestC::test_y'
    >>> unittest_test_id("test_mod (unittest.loader._FailedTest.test_mod)")
    'test_mod.py'
    """
    files = repository_files(trace, rootdir)
    description = description.strip()
    if _NOSE_FAILURE.match(description):  # nose: a module that failed to import
        return own_test_file(trace, rootdir)
    if found := _METHOD.match(description):
        method, path = found["method"], found["path"]
        if path.endswith("." + method):
            path = path[: -len(method) - 1]
        if any(path.endswith(holder) or f".{holder}." in path for holder in _LOADER_FAILURES):
            return dotted_test_id(method, files, module_only=True)
        if method in _MODULE_FIXTURES:
            return dotted_test_id(path, files, module_only=True)
        if method in _CLASS_FIXTURES:
            return _class_id(path, files)
        return f"{_class_id(path, files)}::{method}"
    if (found := _FUNCTION.match(description)) and "." in found["path"]:
        return dotted_test_id(found["path"], files)
    return None


def block_failures(runner: str, block: str, rootdir: str | None = None) -> list[RunnerFailure]:
    """The failures a ``unittest`` or ``trial`` block reports."""
    if runner == "trial":
        return trial_failures(block, rootdir)
    found = unittest_failure(block, rootdir)
    return [found] if found else []


def _class_id(path: str, files: list[str]) -> str:
    """``pkg.test_mod.TestC`` → ``pkg/test_mod.py::TestC``: the last segment is the class."""
    module, _, cls = path.rpartition(".")
    if not module:
        return dotted_test_id(path, files, module_only=True)
    return f"{dotted_test_id(module, files, module_only=True)}::{cls}"


def trial_failures(block: str, rootdir: str | None = None) -> list[RunnerFailure]:
    """Every test a trial block names (``[FAIL]`` or ``[ERROR]`` first, after the rule)."""
    lines = _without_rule([line.rstrip() for line in block.splitlines()])
    if not lines or not TRIAL_HEADER.match(lines[0].strip()):
        return []
    body = _trace(lines[1:]).splitlines()
    names: list[str] = []
    while body and (is_dotted_name(body[-1].strip()) or not body[-1].strip()):
        if body[-1].strip():
            names.append(body[-1].strip())
        body.pop()
    trace = "\n".join(body).strip("\n")
    exception = last_exception_line(trace)
    error = str(exception) if exception else _last_line(trace)
    files = repository_files(trace, rootdir)
    return [
        RunnerFailure(_trial_id(name, files, trace), error, trace) for name in reversed(names)
    ] or [RunnerFailure(None, error, trace)]


def _trial_id(name: str, files: list[str], trace: str) -> str:
    """A trial name is a test method, or a module whose import failed (its file in the trace)."""
    module_file = "/".join(name.split(".")) + ".py"
    if any(path == module_file or path.endswith("/" + module_file) for path in files):
        return dotted_test_id(name, files, module_only=True)
    return dotted_test_id(name, files)


def _without_rule(lines: list[str]) -> list[str]:
    while lines and (BARE_RULE.match(lines[0].strip()) or not lines[0].strip()):
        lines = lines[1:]
    return lines


def _trace(lines: list[str]) -> str:
    """The traceback part of a block: after the header's dashes, before the closing dashes."""
    body = list(lines)
    if body and _DASHES.match(body[0].strip()):
        body = body[1:]
    for index, line in enumerate(body):
        if _DASHES.match(line.strip()) or RAN_LINE.match(line.strip()):
            body = body[:index]
            break
    return "\n".join(body).strip("\n")


def _last_line(text: str) -> str:
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
