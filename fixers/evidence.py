"""Safety evidence for proposed changes: parses, idempotent, scoped, imports in a subprocess."""

from __future__ import annotations

import ast
import difflib
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import libcst as cst

from fixers.outcome import FileChange, ImportStatus

PROBE = Path(__file__).with_name("import_probe.py")
IMPORT_TIMEOUT_S = 120


def parse_problem(code: str, python: tuple[int, int] | None) -> str | None:
    """Why ``code`` is not valid Python (for the repository's oldest Python), or None."""
    try:
        cst.parse_module(code)
        ast.parse(code, feature_version=python if python and python >= (3, 7) else None)
    except (cst.ParserSyntaxError, SyntaxError, ValueError) as exc:
        return f"generated code does not parse: {exc}"
    return None


def changed_old_lines(before: str, after: str) -> list[int]:
    """1-based lines of ``before`` that a change touches (an insertion touches its anchor)."""
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    lines: list[int] = []
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag == "equal":
            continue
        lines.extend(range(i1 + 1, i2 + 1) if i2 > i1 else [max(i1, 1)])
    return lines


def allowed_spans(before: str, classes: Iterable[str]) -> list[tuple[int, int]]:
    """Line ranges a fix may touch: each targeted class (decorators included) and the imports."""
    tree = ast.parse(before)
    spans: list[tuple[int, int]] = []
    first_def = min(
        (
            min([s.lineno, *(d.lineno for d in s.decorator_list)])
            for s in tree.body
            if isinstance(s, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        ),
        default=len(before.splitlines()) + 1,
    )
    spans.append((1, first_def))
    wanted = set(classes)

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                qual = f"{prefix}{stmt.name}"
                if qual in wanted:
                    start = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
                    spans.append((start, (stmt.end_lineno or stmt.lineno) + 1))
                walk(stmt.body, f"{qual}.")

    walk(tree.body, "")
    return spans


def scope_problem(before: str, after: str, classes: Iterable[str]) -> str:
    """Empty when the diff stays inside the targeted classes and imports; else where it strays."""
    spans = allowed_spans(before, classes)
    stray = [
        n for n in changed_old_lines(before, after) if not any(lo <= n <= hi for lo, hi in spans)
    ]
    return f"changes outside targeted classes at lines {stray[:5]}" if stray else ""


def import_root(path: Path, module: str) -> Path:
    """The ``sys.path`` entry from which ``module`` (at ``path``) imports."""
    depth = len(module.split(".")) - (0 if path.name == "__init__.py" else 1)
    return path.parents[depth]


def check_imports(
    root: Path, changes: list[FileChange], python: str = sys.executable
) -> dict[str, tuple[ImportStatus, str]]:
    """Import every changed module, with its new source, in one fresh interpreter.

    Returns ``path -> (status, detail)``; a missing dependency gives ``unverified``.
    """
    modules: dict[str, list[str]] = {}
    roots: list[str] = []
    for change in changes:
        path = (root / change.path).resolve()
        modules[change.module] = [str(path), change.after]
        roots.append(str(import_root(path, change.module)))
    roots.append(str(root.resolve()))
    request = {"path": list(dict.fromkeys(roots)), "modules": modules}
    proc_error = ""
    try:
        proc = subprocess.run(
            [python, "-I", "-B", str(PROBE)],
            input=json.dumps(request),
            text=True,
            capture_output=True,
            cwd=root,
            timeout=IMPORT_TIMEOUT_S,
            check=False,
            env={"PATH": os.environ.get("PATH", "")},
        )
        answer = json.loads(proc.stdout) if proc.returncode == 0 else {}
        proc_error = "".join(proc.stderr.strip().splitlines()[-1:])
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as exc:
        answer, proc_error = {}, str(exc)
    results: dict[str, tuple[ImportStatus, str]] = {}
    for change in changes:
        status, detail = answer.get(change.module, ("unverified", f"probe failed: {proc_error}"))
        results[change.path] = (status, detail[:300])
    return results
