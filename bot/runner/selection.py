"""Which tests verify a fix: the failed ones, those importing changed code, conformance."""

from __future__ import annotations

import ast
import shlex
import tomllib
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fixers.repo.files import is_test_path, list_python_files, module_names
from fixers.repo.paths import FileRefused, read_repo_file
from fixers.sweep.pyfacts import FactsError, parse_python, resolve_relative

TEST_DIRS = ("tests", "test", "testing")
CONTRACT_MARKERS = ("SpecWorkerBase", "runtime.speculative")


@dataclass(frozen=True)
class Selection:
    """The verification plan for one fix, the same for the before and after runs."""

    pytest_targets: list[str]
    failed_tests: list[str]
    importing_tests: list[str]
    conformance_packages: list[str] = field(default_factory=list)
    extra_command: list[str] | None = None
    notes: list[str] = field(default_factory=list)
    # The other root causes' failed tests, their ids resolved the same way (listed, not run).
    other_tests: list[str] = field(default_factory=list)


def imported_modules(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """Every module an import statement of ``tree`` may load (``a.b`` also loads ``a``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = resolve_relative(module, is_package, node.level, node.module)
            if base:
                names.add(base)
            names.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names)
    with_parents = set(names)
    for name in names:
        parts = name.split(".")
        with_parents.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return with_parents


def import_graph(root: Path, files: Sequence[str]) -> dict[str, set[str]]:
    """file → the repository files it imports (directly)."""
    sources = module_names(root, list(files))
    by_module = {source.module: source.rel for source in sources if source.module}
    graph: dict[str, set[str]] = {}
    for source in sources:
        try:
            tree = parse_python(read_repo_file(root, source.rel), source.rel)
        except (FactsError, FileRefused, OSError):
            graph[source.rel] = set()
            continue
        imported = imported_modules(tree, source.module, source.is_package)
        graph[source.rel] = {by_module[name] for name in imported if name in by_module} - {
            source.rel
        }
    return graph


def find_importing_tests(graph: dict[str, set[str]], changed: Iterable[str]) -> list[str]:
    """Test files that import any of ``changed``, directly or through other repository modules."""
    importers: dict[str, set[str]] = defaultdict(set)
    for source, targets in graph.items():
        for target in targets:
            importers[target].add(source)
    seen = set(changed)
    queue = deque(seen)
    while queue:
        for importer in importers[queue.popleft()]:
            if importer not in seen:
                seen.add(importer)
                queue.append(importer)
    return sorted(f for f in seen if _is_pytest_module(f))


def _is_pytest_module(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return is_test_path(rel, TEST_DIRS) and (name.startswith("test_") or name.endswith("_test.py"))


def conformance_packages(root: Path, changed: Iterable[str]) -> list[str]:
    """Top-level packages of changed library files that follow the runtime's contract."""
    packages: set[str] = set()
    for rel in changed:
        if is_test_path(rel, TEST_DIRS) or "/" not in rel:
            continue
        try:
            text = read_repo_file(root, rel).decode("utf-8", errors="replace")
        except (FileRefused, OSError):
            text = ""
        top = rel.split("/", 1)[0]
        if (
            all(marker in text for marker in CONTRACT_MARKERS)
            and (root / top / "__init__.py").is_file()
        ):
            packages.add(top)
    return sorted(packages)


def extra_command(root: Path) -> tuple[list[str] | None, str | None]:
    """``[verify] command`` from the target's ``.repairbot.toml`` (split like a shell, never
    run by one)."""
    config = root / ".repairbot.toml"
    if not config.is_file():
        return None, None
    try:
        text = read_repo_file(root, ".repairbot.toml").decode("utf-8")
        command = tomllib.loads(text).get("verify", {}).get("command")
    except (  # RecursionError: arrays nested thousands deep exhaust tomllib's parser
        tomllib.TOMLDecodeError,
        RecursionError,
        UnicodeDecodeError,
        AttributeError,
        FileRefused,
    ) as exc:
        return None, f".repairbot.toml ignored: {exc}"
    if command is None:
        return None, None
    if not isinstance(command, str) or not command.strip():
        return None, ".repairbot.toml [verify] command must be a non-empty string"
    try:
        return shlex.split(command), None
    except ValueError as exc:
        return None, f".repairbot.toml [verify] command does not parse: {exc}"


def resolve_test_id(root: Path, test_id: str, files: Sequence[str]) -> str | None:
    """``test_id`` as it names a file of this tree: unchanged when its file exists; else, when
    exactly one file of the tree ends with its path, the id with that file (a ``src/`` layout
    a unittest name did not show, a checkout directory a log's paths kept); else None.

    The ids are pytest node ids (``fixers.intake.testids``): the verification reruns them, and
    unittest, nose, Django and trial tests alike, with pytest.
    """
    path, separator, rest = test_id.partition("::")
    if (root / path).is_file():
        return test_id
    found = [f for f in files if f.endswith("/" + path.lstrip("/"))] if path.endswith(".py") else []
    return f"{found[0]}{separator}{rest}" if len(found) == 1 else None


def select_tests(
    root: Path, *, changed: Sequence[str], failed: Sequence[str], others: Sequence[str] = ()
) -> Selection:
    """The plan: failed tests that still exist, test files importing changed code, and the rest."""
    files, _ = list_python_files(root)
    graph = import_graph(root, files)
    importing = find_importing_tests(graph, changed)
    resolved = {t: resolve_test_id(root, t, files) for t in {*failed, *others}}
    known_failed = sorted({r for t in failed if (r := resolved[t])})
    whole_files = set(importing)
    targets = sorted(
        whole_files | {t for t in known_failed if t.split("::", 1)[0] not in whole_files}
    )
    missing = sum(1 for t in set(failed) if resolved[t] is None)
    notes = [f"{missing} failed test(s) from the report are not in this tree"] if missing else []
    moved = sorted(t for t in set(failed) if resolved[t] not in (None, t))
    if moved:
        notes.append(
            f"{len(moved)} failed test id(s) found under another directory of this tree, "
            f"e.g. {moved[0]} → {resolved[moved[0]]}"
        )
    command, problem = extra_command(root)
    if problem:
        notes.append(problem)
    return Selection(
        pytest_targets=targets,
        failed_tests=known_failed,
        importing_tests=importing,
        conformance_packages=conformance_packages(root, changed),
        extra_command=command,
        notes=notes,
        other_tests=sorted({resolved[t] or t for t in others}),
    )
