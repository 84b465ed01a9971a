"""The import layers as tests: import-linter's contracts hold, and each would catch a back-edge.

The contracts live in ``pyproject.toml`` (``[tool.importlinter]``). The back-edge cases are the
cycles the tree had before the layers (issue #16): each is planted as one import line in a
copy of the packages, and the linter must refuse it.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
PACKAGES = ("bot", "fixers", "runtime")

# Where a subcommand imports its own dependencies inside its function: `repairbot --help` and
# the light subcommands (sweep, classify) must not pay for FastAPI, Celery and the database.
LAZY_IMPORT_PACKAGES = ("bot/cli/",)


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )


def test_the_contracts_hold() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " 0 broken" in result.stdout, result.stdout[-3000:]


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packages and the linter's configuration, copied once for the planted back-edges."""
    root = tmp_path_factory.mktemp("layers")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("tests"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


BACK_EDGES = [
    # (module that imports, what it imports): each was a real cycle before the layers
    ("bot/runner/requests.py", "bot.pipeline.repair.task"),  # runner → tasks
    ("bot/forges/github/job_logs.py", "bot.intake.jenkins"),  # github → the CI intake
    ("bot/commands/dispatch.py", "bot.intake.route"),  # commands ↔ the webhook handlers
    ("bot/forges/github/forge.py", "bot.pipeline.pull_requests"),  # forge ↔ github events
    ("bot/forges/local/forge.py", "bot.forges.github.forge"),  # one forge into another
    ("bot/git.py", "bot.forges.base"),  # plumbing above a forge
    ("bot/db/models.py", "bot.queue.enqueue"),  # the database sending tasks
    ("bot/dashboard/detail.py", "bot.pipeline.repair.task"),  # the dashboard reads the db only
    ("fixers/sweep/run.py", "bot.config"),  # the libraries never import the service
    ("runtime/engine.py", "bot.db.models"),
    ("bot/version.py", "torch"),  # torch is the [runtime] extra's: the service installs without it
    ("fixers/sweep/run.py", "torch"),
]


@pytest.mark.parametrize(("module", "target"), BACK_EDGES, ids=[e[0] for e in BACK_EDGES])
def test_a_planted_back_edge_breaks_a_contract(tree_copy: Path, module: str, target: str) -> None:
    path = tree_copy / module
    original = path.read_text()
    try:
        path.write_text(original + f"\nimport {target}  # planted by the test\n")
        result = _lint(tree_copy)
    finally:
        path.write_text(original)
    assert result.returncode != 0, result.stdout[-3000:]
    importer = module.removesuffix(".py").replace("/", ".")
    assert f"{importer} -> {target}" in result.stdout, result.stdout[-3000:]


def _import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every set of modules that import each other round (Tarjan's strongly connected
    components over the direct imports, ``TYPE_CHECKING`` imports included)."""
    modules = sorted(m for m in graph.modules if m.split(".")[0] in PACKAGES)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in edges[module]:
            if imported not in edges:
                continue
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in modules:
        if module not in index:
            visit(module)
    return cycles


def _cycles_in(root: Path) -> list[list[str]]:
    # A fresh interpreter: grimp finds packages through the import system, and this one already
    # holds the checkout's own ``bot``.
    result = subprocess.run(
        [sys.executable, __file__],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    cycles: list[list[str]] = json.loads(result.stdout)
    return cycles


def test_no_modules_import_each_other_round() -> None:
    """0 circles: a cycle the layers allow (inside one layer) is still one concept split in two."""
    assert _cycles_in(ROOT) == []


def test_the_cycle_finder_finds_a_planted_cycle(tree_copy: Path) -> None:
    path = tree_copy / "bot/forges/github/write_ops.py"
    original = path.read_text()
    try:
        path.write_text(original + "\nimport bot.forges.github.api  # planted by the test\n")
        cycles = _cycles_in(tree_copy)
    finally:
        path.write_text(original)
    assert ["bot.forges.github.api", "bot.forges.github.write_ops"] in cycles


def _function_level_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    names = (
                        inner.module if isinstance(inner, ast.ImportFrom) else inner.names[0].name
                    )
                    found.append(f"{path.relative_to(ROOT)}:{inner.lineno} {node.name}: {names}")
    return found


def test_no_import_hides_inside_a_function() -> None:
    """A function-level import is how a cycle hides from the linter; the layers need none."""
    offenders = [
        line
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if not str(path.relative_to(ROOT)).startswith(LAZY_IMPORT_PACKAGES)
        and "tests" not in path.relative_to(ROOT).parts
        for line in _function_level_imports(path)
    ]
    assert not offenders, "\n".join(offenders)


if __name__ == "__main__":
    print(json.dumps(_import_cycles(grimp.build_graph(*PACKAGES, cache_dir=None))))
