"""Safety evidence: parse check, scope check, import check in a real subprocess."""

from __future__ import annotations

from pathlib import Path

from fixers.evidence import changed_old_lines, check_imports, parse_problem, scope_problem
from fixers.outcome import FileChange

BEFORE = "import os\n\n\nclass A:\n    x = 1\n\n\nclass B:\n    y = 2\n"


def test_parse_problem() -> None:
    assert parse_problem("x = 1\n", (3, 10)) is None
    assert "does not parse" in (parse_problem("def f(:\n", None) or "")
    assert "does not parse" in (parse_problem("match x:\n    case 1: pass\n", (3, 9)) or "")


def test_scope_allows_targeted_class_and_imports_only() -> None:
    inside = BEFORE.replace("x = 1", "x = 2").replace("import os", "import os\nimport sys")
    assert scope_problem(BEFORE, inside, ["A"]) == ""
    outside = BEFORE.replace("y = 2", "y = 3")
    assert "lines [9]" in scope_problem(BEFORE, outside, ["A"])
    assert changed_old_lines(BEFORE, BEFORE) == []


def _change(tmp_path: Path, rel: str, module: str, after: str) -> FileChange:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("raise RuntimeError('the old source must not be imported')\n")
    return FileChange(rel, module, path.read_text(), after, ["x"], ["A"])


def test_imports_use_the_new_source_and_classify_failures(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    changes = [
        _change(tmp_path, "pkg/good.py", "pkg.good", "from pkg import sibling\nVALUE = 1\n"),
        _change(tmp_path, "pkg/sibling.py", "pkg.sibling", "X = 2\n"),
        _change(tmp_path, "pkg/bad.py", "pkg.bad", "class A:\n    pass\nA.missing\n"),
        _change(tmp_path, "pkg/dep.py", "pkg.dep", "import not_installed_anywhere_xyz\n"),
    ]
    results = check_imports(tmp_path, changes)
    assert results["pkg/good.py"] == ("ok", "")
    assert results["pkg/sibling.py"] == ("ok", "")
    assert results["pkg/bad.py"][0] == "failed" and "AttributeError" in results["pkg/bad.py"][1]
    assert results["pkg/dep.py"][0] == "unverified"
    assert not list(tmp_path.rglob("__pycache__"))
