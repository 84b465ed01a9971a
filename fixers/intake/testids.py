"""pytest node ids from JUnit-style (className, name) pairs."""

from __future__ import annotations


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
    return "::".join([module, *parts[split:], name])


def _module_path(parts: list[str], file: str | None) -> str:
    if file and file.endswith(".py"):
        return file
    return "/".join(parts) + ".py"
