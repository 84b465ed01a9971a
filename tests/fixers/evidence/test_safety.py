"""Safety evidence: parse check, scope check, import check in the real sandbox."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fixers.evidence.import_check import check_imports
from fixers.evidence.safety import changed_old_lines, parse_problem, scope_problem
from fixers.sandbox import SandboxOptions
from fixers.sweep.outcome import FileChange

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


def _package(tmp_path: Path) -> Path:
    # A checkout as git makes it (mode 0755): pytest's own tmp_path is 0700, which the
    # unprivileged sandbox user could not read.
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    return repo


def test_imports_use_the_new_source_and_classify_failures(tmp_path: Path) -> None:
    repo = _package(tmp_path)
    changes = [
        _change(repo, "pkg/good.py", "pkg.good", "from pkg import sibling\nVALUE = 1\n"),
        _change(repo, "pkg/sibling.py", "pkg.sibling", "X = 2\n"),
        _change(repo, "pkg/bad.py", "pkg.bad", "class A:\n    pass\nA.missing\n"),
        _change(repo, "pkg/dep.py", "pkg.dep", "import not_installed_anywhere_xyz\n"),
        _change(repo, "pkg/noisy.py", "pkg.noisy", "print('{not json')\n"),
    ]
    results = check_imports(repo, changes)
    assert results["pkg/good.py"] == ("ok", "")
    assert results["pkg/sibling.py"] == ("ok", "")
    assert results["pkg/bad.py"][0] == "failed" and "AttributeError" in results["pkg/bad.py"][1]
    assert results["pkg/dep.py"][0] == "unverified"
    assert results["pkg/noisy.py"] == ("ok", "")  # printing at import garbles nothing
    assert not list(tmp_path.rglob("__pycache__"))


def _without_bwrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A host without bubblewrap: a PATH with git but not bwrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git = subprocess.run(["which", "git"], capture_output=True, text=True, check=True)
    (bin_dir / "git").symlink_to(git.stdout.strip())
    monkeypatch.setenv("PATH", str(bin_dir))


def test_without_a_sandbox_imports_are_unverified_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _package(tmp_path)
    marker = tmp_path / "imported"
    change = _change(repo, "pkg/mod.py", "pkg.mod", f"open({str(marker)!r}, 'w')\n")
    _without_bwrap(monkeypatch, tmp_path)
    status, detail = check_imports(repo, [change])["pkg/mod.py"]
    assert status == "unverified" and "bwrap is not installed" in detail
    assert not marker.exists()  # the module's code did not run


def test_development_may_import_unsandboxed_and_the_evidence_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _package(tmp_path)
    change = _change(repo, "pkg/mod.py", "pkg.mod", "VALUE = 1\n")
    _without_bwrap(monkeypatch, tmp_path)
    sandbox = SandboxOptions(allow_unsandboxed=True)
    assert check_imports(repo, [change], sandbox=sandbox)["pkg/mod.py"] == ("ok", "NOT SANDBOXED")
