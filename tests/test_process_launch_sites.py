"""No target code outside the sandbox: every place our code starts a process is known.

An AST scan of ``bot/``, ``fixers/`` and ``runtime/`` for calls that start a process
(``subprocess.*``, ``os.exec*``, ``os.spawn*``, ``os.system``, ``os.popen``, ``os.fork``,
``os.posix_spawn*``, ``pty.spawn``, ``asyncio.create_subprocess_*``) and for imports of those
names. Each site must be in the allow-list below with its reason; only ``_spawn`` in
``fixers/sandbox/launch.py`` may start target-repository code (and the import server it starts
forks its per-module children inside that sandbox). (Process pools are not scanned:
they run our own functions, and those start target code through the launcher.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "fixers", "runtime")
ALLOWED = {
    ("fixers/sandbox/launch.py", "_spawn"): "THE launcher: bubblewrap, rlimits, timeouts",
    ("fixers/evidence/import_probe.py", "_fork_child"): (
        "the import server's child per module: runs only inside the sandbox the launcher started"
    ),
    ("bot/git.py", "git"): "git plumbing on our own checkouts; runs no repository code",
    ("bot/git.py", "run_git"): "the same, with bytes out and the exit status read by the caller",
    ("bot/git.py", "cat_file"): "`git cat-file --batch` on our mirror: reads blobs, runs nothing",
    (
        "bot/forges/github/mirror.py",
        "_git",
    ): "git fetch/push of our mirrors; runs no repository code",
    ("bot/forges/gitlab/remote.py", "_git"): (
        "git fetch/push of our GitLab mirrors (the GitHub mirror's, with a token header); runs "
        "no repository code"
    ),
    ("fixers/repo/files.py", "_git_files"): "`git ls-files`: lists tracked files, runs nothing",
    ("fixers/check/base_tree.py", "_git"): (
        "git plumbing for `repairbot check`'s base: refs, and a base's *.py checked out into a "
        "throwaway repository (no hooks, no filter drivers); runs no repository code"
    ),
    ("bot/runner/environment.py", "build_uv_environment"): (
        "uv builds a target's environment from plain requirements, wheels only: unpacking a "
        "wheel runs no code; the interpreter built runs only through the launcher"
    ),
    ("bot/pipeline/embedded.py", "_supervise"): (
        "starts our own `repairbot worker` for the verification queues; it runs target code "
        "only through the launcher"
    ),
}
OS_PREFIXES = ("exec", "spawn", "posix_spawn")
OS_NAMES = {"system", "popen", "fork", "forkpty"}
SUBPROCESS_STARTERS = {"run", "Popen", "call", "check_call", "check_output", "getoutput"}
SUBPROCESS_STARTERS |= {"getstatusoutput"}


def _starts_process(module: str, name: str) -> bool:
    if module == "subprocess":
        return name in SUBPROCESS_STARTERS
    if module == "os":
        return name in OS_NAMES or name.startswith(OS_PREFIXES)
    if module == "pty":
        return name in {"spawn", "fork"}
    if module == "asyncio":
        return name.startswith("create_subprocess")
    return False


def launch_sites(source: str) -> list[tuple[str, int, str]]:
    """``(enclosing function, line, what)`` for each process start or starter import."""
    tree = ast.parse(source)
    sites: list[tuple[str, int, str]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = (
                child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else where
            )
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                owner = child.func.value
                if isinstance(owner, ast.Name) and _starts_process(owner.id, child.func.attr):
                    sites.append((where, child.lineno, f"{owner.id}.{child.func.attr}"))
            if isinstance(child, ast.ImportFrom) and child.module:
                for alias in child.names:
                    if _starts_process(child.module, alias.name):
                        sites.append((where, child.lineno, f"from {child.module} import"))
            visit(child, inner)

    visit(tree, "<module>")
    return sites


def test_every_process_start_is_the_launcher_or_allowed_git_plumbing() -> None:
    found: dict[tuple[str, str], list[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for where, line, what in launch_sites(path.read_text(encoding="utf-8")):
                found.setdefault((rel, where), []).append(f"{rel}:{line} {what}")
    unexpected = {key: sites for key, sites in found.items() if key not in ALLOWED}
    assert not unexpected, f"start target code with fixers.sandbox.run_isolated: {unexpected}"
    assert ("fixers/sandbox/launch.py", "_spawn") in found  # the scan sees the launcher


@pytest.mark.parametrize(
    "source",
    [
        "import subprocess\ndef f():\n    subprocess.run(['x'])\n",
        "import os\ndef f():\n    os.execv('/bin/sh', ['sh'])\n",
        "import os\nos.system('x')\n",
        "from subprocess import Popen\n",
        "import asyncio\nasync def f():\n    await asyncio.create_subprocess_exec('x')\n",
    ],
)
def test_the_scan_finds_each_way_to_start_a_process(source: str) -> None:
    assert launch_sites(source)


def test_the_scan_ignores_what_starts_nothing() -> None:
    assert not launch_sites("import subprocess, os\nx = subprocess.DEVNULL\nos.path.join('a')\n")
