"""Safety evidence for proposed changes: parses, idempotent, scoped, imports (in the sandbox)."""

from __future__ import annotations

import ast
import dataclasses
import difflib
import json
import shutil
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import libcst as cst

from fixers.outcome import FileChange, ImportStatus
from fixers.sandbox import (
    GIB,
    STRICT,
    Limits,
    SandboxOptions,
    SandboxUnavailable,
    read_output,
    run_isolated,
)

PROBE = Path(__file__).with_name("import_probe.py")
# Importing a module should take seconds: these bound a hostile one (a fork bomb, a 20 GiB
# allocation, an endless loop at import) long before the repair's own budget.
PROBE_LIMITS = Limits(
    timeout_s=120,
    max_memory_bytes=8 * GIB,
    max_processes=256,
    max_cpu_s=240,
    max_file_bytes=64 << 20,
)


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


def _probe_request(root: Path, changes: list[FileChange]) -> dict[str, object]:
    """What the probe imports: each changed module with its new source, from inside ``root``."""
    base = root.resolve()
    modules: dict[str, list[str]] = {}
    roots: list[str] = []
    for change in changes:
        path = (root / change.path).resolve()
        modules[change.module] = [str(path), change.after]
        top = import_root(path, change.module)
        if top.is_relative_to(base):  # only the repository itself is visible in the sandbox
            roots.append(str(top))
    roots.append(str(base))
    return {"path": list(dict.fromkeys(roots)), "modules": modules}


def _last_line(log: Path) -> str:
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("$ ")]
    return lines[-1] if lines else ""


def check_imports(
    root: Path,
    changes: list[FileChange],
    python: str = sys.executable,
    *,
    sandbox: SandboxOptions = STRICT,
    limits: Limits = PROBE_LIMITS,
) -> dict[str, tuple[ImportStatus, str]]:
    """Import every changed module, with its new source, in one fresh interpreter in the sandbox.

    Importing runs the target's module-level code, so it runs like its tests: in the sandbox,
    with ``root`` read-only and nothing else of the host. Returns ``path -> (status, detail)``;
    a missing dependency gives ``unverified``, and so does a sandbox that cannot run (with the
    reason) unless ``sandbox`` allows running unconfined, which the detail then says.
    """
    run_dir = Path(tempfile.mkdtemp(prefix="repairbot-import-probe-"))
    request, answer, log = run_dir / "request.json", run_dir / "answer.json", run_dir / "probe.log"
    try:
        request.write_text(json.dumps(_probe_request(root, changes)))
        options = dataclasses.replace(
            sandbox, readonly=(*sandbox.readonly, root, PROBE), interpreters=(python,)
        )
        result = run_isolated(
            [python, "-I", "-B", str(PROBE), str(request), str(answer)],
            cwd=root,
            run_dir=run_dir,
            log_path=log,
            limits=limits,
            options=options,
        )
        text = read_output(answer) if result.returncode == 0 else None
        parsed = json.loads(text) if text else {}
        found = parsed if isinstance(parsed, dict) else {}
        why = "timed out" if result.timed_out else _last_line(log) or f"exit {result.returncode}"
        unconfined = result.isolation.startswith("NOT SANDBOXED")
    except SandboxUnavailable as exc:
        found, why, unconfined = {}, str(exc), False
    except (OSError, ValueError) as exc:  # ValueError: the answer is not JSON
        found, why, unconfined = {}, str(exc), False
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    results: dict[str, tuple[ImportStatus, str]] = {}
    for change in changes:
        status, detail = _answer_for(found.get(change.module), why)
        if unconfined:
            detail = f"NOT SANDBOXED; {detail}" if detail else "NOT SANDBOXED"
        results[change.path] = (status, detail[:300])
    return results


def _answer_for(entry: object, why: str) -> tuple[ImportStatus, str]:
    """One module's answer, checked (the target's code ran in that process and could forge it)."""
    if isinstance(entry, list) and len(entry) == 2 and entry[0] in ("ok", "failed", "unverified"):
        return entry[0], str(entry[1])
    return "unverified", f"probe failed: {why}"
