"""The shape of the code as tests: small modules, short functions, tests that mirror the tree.

Budgets (issue #16): a source module holds at most 400 lines and a function at most 60 (tests
are exempt from both). A test file lives where the module it tests lives: the test of
``bot/api/webhooks.py`` is ``tests/bot/api/test_webhooks.py``; more test files of one module add
an aspect after its name (``sweep/test_run_golden.py`` tests ``fixers/sweep/run.py``). Exempt: the
end-to-end suite (it drives the whole service), shared fakes and fixtures, and the repository-wide
rules at the top of ``tests/`` (this file among them).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ("bot", "fixers", "runtime", "bench", "scripts")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
NOT_MIRRORED = ("e2e", "fakes", "fixtures")


def _sources() -> list[Path]:
    return [
        path
        for folder in SOURCE
        for path in sorted((ROOT / folder).rglob("*.py"))
        if "tests" not in path.relative_to(ROOT).parts
    ]


def test_every_module_is_within_the_line_budget() -> None:
    over = [
        f"{path.relative_to(ROOT)}: {lines} lines"
        for path in _sources()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert not over, "\n".join(over)


def test_every_function_is_within_the_line_budget() -> None:
    over = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    over.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length}")
    assert not over, "\n".join(over)


def mirrored_module(test_file: Path) -> Path | None:
    """The module or package a test file is named after, or None if there is none.

    ``tests/fixers/sweep/test_run_golden.py`` → ``fixers/sweep/run.py``: the longest name in the
    mirrored folder that the test's name starts with (followed by nothing or ``_``).
    """
    relative = test_file.relative_to(ROOT / "tests")
    folder = ROOT.joinpath(*relative.parts[:-1])
    stem = relative.stem.removeprefix("test_")
    if not folder.is_dir():
        return None
    names = sorted(
        (p.stem if p.suffix == ".py" else p.name for p in folder.iterdir() if _is_module(p)),
        key=len,
        reverse=True,
    )
    for name in names:
        if stem == name or stem.startswith(f"{name}_"):
            candidate = folder / f"{name}.py"
            return candidate if candidate.exists() else folder / name
    return None


def _is_module(path: Path) -> bool:
    if path.suffix == ".py" and path.name != "__init__.py":
        return True
    return path.is_dir() and (path / "__init__.py").exists()


def _test_files() -> list[Path]:
    tests = ROOT / "tests"
    return [
        path
        for path in sorted(tests.rglob("test_*.py"))
        if path.parent != tests and path.relative_to(tests).parts[0] not in NOT_MIRRORED
    ]


def test_every_test_file_mirrors_a_module() -> None:
    stray = [str(p.relative_to(ROOT)) for p in _test_files() if mirrored_module(p) is None]
    assert not stray, "no module of that name beside the mirrored folder:\n" + "\n".join(stray)


def test_the_mirror_rule_finds_the_module_and_refuses_a_stray(tmp_path: Path) -> None:
    assert (
        mirrored_module(ROOT / "tests/fixers/sweep/test_run_golden.py")
        == ROOT / "fixers/sweep/run.py"
    )
    assert mirrored_module(ROOT / "tests/bot/test_config.py") == ROOT / "bot/config.py"
    assert mirrored_module(ROOT / "tests/bot/test_nothing_here.py") is None
    assert mirrored_module(ROOT / "tests/bot/nowhere/test_config.py") is None
