"""Test ids as the runner reruns them: pytest node ids, built from what each runner prints.

The verification reruns failed tests with pytest (``bot/runner/phases.py``), so every id is a
pytest node id: ``path/to/test_x.py::Class::test_y[params]``, or ``path/to/test_x.py`` for a
module that failed to import. Runners that print dotted names (unittest, nose, nose2, Django,
Twisted trial, TeamCity's reporters) are mapped to the file their traceback names when one of
its frames matches the dotted module, else to the module's path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from fixers.classify.failures import Frame
from fixers.intake.tracebacks import is_repository_path, parse_frames, relative_to_root

# What an id never holds: escape sequences and control characters (a CR, a BEL, a stray ESC).
_ESCAPES = re.compile(
    r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|_[^\x07\x1b]*(?:\x07|\x1b\\)|[()][A-Za-z0-9])?"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_TEST_DIRS = frozenset({"tests", "test", "testing"})


def clean_test_id(test_id: str | None) -> str | None:
    """``test_id`` without escape sequences, control characters and surrounding blanks; None
    when nothing is left."""
    if test_id is None:
        return None
    text = _CONTROL.sub("", _ESCAPES.sub("", test_id)).strip()
    return text or None


def node_id(class_name: str | None, name: str, file: str | None = None) -> str:
    """The pytest node id for a JUnit test case.

    pytest writes ``classname="tests.test_x.TestC" name="test_y"``; a collection error has an
    empty classname and the module's dotted path as its name. Trailing segments that look like
    classes (capitalised) become ``::`` parts; the rest is the module path.

    >>> node_id("tests.test_x.TestC", "test_y[a.b]")
    'tests/test_x.py::TestC::test_y[a.b]'
    >>> node_id("", "tests.test_x")
    'tests/test_x.py'
    """
    class_name = (class_name or "").strip()
    if class_name in ("", "(root)"):
        return _module_path(name.split("."), file)
    parts = class_name.split(".")
    split = len(parts)
    while split > 1 and parts[split - 1][:1].isupper():
        split -= 1
    module = _module_path(parts[:split], file)
    test_id = "::".join([module, *parts[split:], name])
    return clean_test_id(test_id) or test_id


def _module_path(parts: list[str], file: str | None) -> str:
    if file and file.endswith(".py"):
        return file
    return "/".join(parts) + ".py"


def is_test_file(path: str) -> bool:
    """Named like a test module by pytest's, unittest's or Django's defaults."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return (name.startswith("test") and name.endswith(".py")) or name.endswith("_test.py")


def is_test_path(path: str) -> bool:
    """A test module, or a file in a ``tests``/``test``/``testing`` directory (not a
    ``conftest.py``, which holds fixtures, not tests)."""
    return is_test_file(path) or (_under_test_dir(path) and not path.endswith("conftest.py"))


def _under_test_dir(path: str) -> bool:
    return any(part in _TEST_DIRS for part in path.replace("\\", "/").split("/")[:-1])


def repo_relative(path: str, rootdir: str | None = None) -> str:
    """``path`` relative to the repository: under ``rootdir`` (pytest's ``rootdir:``) or a CI
    system's checkout directory; a relative path is returned as it is."""
    return relative_to_root(path.replace("\\", "/"), rootdir)


def own_test_frame(frames: Sequence[Frame], rootdir: str | None = None) -> Frame | None:
    """The frame of the test's own file: the outermost frame inside the repository (never
    site-packages, dist-packages or the standard library) that is a test module, else one in a
    test directory, else any repository frame; ``conftest.py`` only when nothing else is."""
    inside = [
        Frame(repo_relative(f.path, rootdir), f.line, f.function, f.source)
        for f in frames
        if is_repository_path(f.path)
    ]
    for wanted in (is_test_file, is_test_path, lambda p: not p.endswith("conftest.py")):
        for frame in inside:
            if wanted(frame.path):
                return frame
    return None


def own_test_file(text: str, rootdir: str | None = None) -> str | None:
    """The repository-relative path of the test's own file in a traceback (see
    :func:`own_test_frame`); an absolute path outside any known checkout is not one."""
    frame = own_test_frame(parse_frames(text), rootdir)
    if frame is None or frame.path.startswith("/"):
        return _cut_at_test_dir(frame.path) if frame else None
    return frame.path


def _cut_at_test_dir(path: str) -> str | None:
    """``/somewhere/checkout/tests/test_x.py`` → ``tests/test_x.py``: the last resort."""
    parts = path.split("/")
    for index, part in enumerate(parts[:-1]):
        if part in _TEST_DIRS:
            return "/".join(parts[index:])
    return None


def repository_files(text: str, rootdir: str | None = None) -> list[str]:
    """Every repository file a traceback names, made relative, outermost first, no repeats."""
    seen: dict[str, None] = {}
    for frame in parse_frames(text):
        if is_repository_path(frame.path):
            seen.setdefault(repo_relative(frame.path, rootdir), None)
    return list(seen)


def dotted_test_id(dotted: str, files: Iterable[str] = (), *, module_only: bool = False) -> str:
    """A pytest node id for a dotted test name (``pkg.test_x.TestC.test_y``).

    The module is the longest dotted prefix that one of ``files`` (the traceback's repository
    files, made relative) ends with, so ``src/pkg/test_x.py`` is found for ``pkg.test_x``; an
    absolute file (no known checkout) gives the module's own path; without one, the
    trailing capitalised segments before the test name are classes and the rest the module.
    ``module_only``: the whole name is a module (an import failure).

    >>> dotted_test_id("pkg.test_x.TestC.test_y")
    'pkg/test_x.py::TestC::test_y'
    >>> dotted_test_id("pkg.test_x.TestC.test_y", ["src/pkg/test_x.py"])
    'src/pkg/test_x.py::TestC::test_y'
    >>> dotted_test_id("pkg.test_x", module_only=True)
    'pkg/test_x.py'
    """
    parts = dotted.split(".")
    candidates = [f.replace("\\", "/") for f in files]
    # A module's path has no more parts than the longest file: no longer prefix can match.
    longest = max((path.count("/") + 1 for path in candidates), default=0)
    for split in range(min(len(parts), longest), 0, -1):
        suffix = "/".join(parts[:split]) + ".py"
        for path in candidates:
            if path == suffix or path.endswith("/" + suffix):
                # An absolute path is outside any checkout we know: the module's own path then.
                return "::".join([suffix if path.startswith("/") else path, *parts[split:]])
    if module_only or len(parts) == 1:
        return "/".join(parts) + ".py"
    split = len(parts) - 1
    while split > 1 and parts[split - 1][:1].isupper():
        split -= 1
    return "::".join(["/".join(parts[:split]) + ".py", *parts[split:]])


def is_dotted_name(text: str) -> bool:
    """Whether ``text`` is a dotted Python name (``pkg.mod.Class.test``)."""
    return bool(_DOTTED.match(text))


def teamcity_name(test_id: str) -> str:
    """The name JetBrains' ``teamcity-messages`` pytest plugin reports for a pytest node id:
    ``tests/test_x.py::TestC::test_y[a.b]`` → ``tests.test_x.TestC.test_y(a_b)``. Used to tell
    a TeamCity message and pytest's own report of the same test apart from two tests."""
    if "::" not in test_id:
        test_id += "::top_level"
    bracket = test_id.find("[")
    params = ""
    if bracket > 0:
        params = "(" + test_id[bracket + 1 :]
        params = params[:-1] + ")" if params.endswith("]") else params
        test_id = test_id[:bracket].removesuffix("::")
    test_id = re.sub(r"\.pyc?::", "::", test_id.replace("::()::", "::"))
    test_id = test_id.replace(".", "_").replace("/", ".").replace("::", ".")
    return test_id + params.replace(".", "_")
