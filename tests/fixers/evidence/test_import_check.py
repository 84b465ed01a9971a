"""The service side of the import evidence: servers started ahead, their answers, their limits."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from fixers.evidence.import_check import (
    _message,
    _send_request,
    check_imports,
    imported_of,
    probe_request,
    start_server,
)
from fixers.sandbox import (
    CGROUP_ROOT,
    Limits,
    SandboxOptions,
    sandbox_problem,
    start_isolated,
    stop_isolated,
    tree_limits_problem,
)
from fixers.sweep.outcome import FileChange

needs_sandbox = pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))


def _write_package(repo: Path) -> list[FileChange]:
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "helper.py").write_text("HELP = 'from disk'\n")
    changes = []
    for name, after in {
        "good": "from pkg.helper import HELP\nassert HELP == 'from disk'\n",
        "bad": "raise ValueError('broken')\n",
    }.items():
        (repo / "pkg" / f"{name}.py").write_text("raise RuntimeError('old source imported')\n")
        changes.append(FileChange(f"pkg/{name}.py", f"pkg.{name}", "", after, ["x"], ["A"]))
    return changes


@needs_sandbox
def test_a_server_started_ahead_on_an_empty_folder_checks_what_arrives_there(
    tmp_path: Path,
) -> None:
    """The spare's life: started on an empty folder, which is renamed, then filled."""
    slot = tmp_path / "spare-1234"
    slot.mkdir()
    server = start_server(slot, preload=())
    assert server.alive()
    assert server.wait_started(time.monotonic() + 60)  # bubblewrap has bound the folder
    worktree = tmp_path / "run-7-1234"
    slot.rename(worktree)  # the sandbox still sees it at its first path
    changes = _write_package(worktree)
    answers = check_imports(worktree, changes, server=server, preload=())
    assert answers["pkg/good.py"] == ("ok", "")
    assert answers["pkg/bad.py"][0] == "failed" and "broken" in answers["pkg/bad.py"][1]
    assert not server.alive()  # one request per server


@needs_sandbox
def test_a_dead_server_given_is_replaced_by_a_fresh_one(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    changes = _write_package(repo)
    server = start_server(repo, preload=())
    assert server.running is not None
    stop_isolated(server.running)
    answers = check_imports(repo, changes, server=server, preload=())
    assert answers["pkg/good.py"] == ("ok", "")
    assert answers["pkg/bad.py"][0] == "failed"


def test_the_request_names_paths_as_the_sandbox_sees_them(tmp_path: Path) -> None:
    repo = tmp_path / "run-7-1234"
    changes = _write_package(repo)
    seen = tmp_path / "spare-1234"
    request = probe_request(repo, changes, seen, 5.0)
    assert request["path"] == [str(seen)]
    modules = request["modules"]
    assert isinstance(modules, dict)
    assert modules["pkg.good"][0] == str(seen / "pkg" / "good.py")
    assert request["timeout_s"] == 5.0


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'["started"]', ["started"]),
        (b'["checking", "pkg.a"]', ["checking", "pkg.a"]),
        (b'["answer", "pkg.a", "ok", ""]', ["answer", "pkg.a", "ok", ""]),
        (b'["answer", "pkg.a", "fine", ""]', None),  # not a status
        (b'["answer", "pkg.a", "ok"]', None),
        (b'["answer", "pkg.a", "ok", 3]', None),
        (b'{"answer": "pkg.a"}', None),
        (b"5", None),
        (b"{not json", None),
        (b"", None),
    ],
)
def test_only_well_formed_messages_count(line: bytes, expected: list[str] | None) -> None:
    assert _message(line) == expected


def test_preloads_are_those_the_files_import() -> None:
    imported = ["torch.nn", "pkg.local.x", "numpy.array", "os"]
    assert imported_of(("torch", "jax", "numpy"), imported) == ("torch", "numpy")
    assert imported_of(("torch",), ["pkg.torch"]) == ()  # the repository's own module


@needs_sandbox
def test_a_server_that_does_not_read_cannot_hold_the_service(tmp_path: Path) -> None:
    """A request larger than a pipe's buffer, to a command that never reads its input."""
    run_dir = tmp_path / "run"
    running = start_isolated(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        cwd=run_dir,
        run_dir=run_dir,
        log_path=run_dir / "log",
        limits=Limits(timeout_s=60),
        stdin=True,
    )
    try:
        request = json.dumps({"modules": {"m": ["x" * (4 << 20), ""]}}).encode()
        problem = _send_request(running, request, deadline=time.monotonic() + 1)
        assert "timed out" in problem  # rather than blocked on the full pipe
    finally:
        stop_isolated(running)


def test_a_relative_root_is_checked_as_from_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `cd /tmp && repairbot fix shp`: the sandbox must see the tree, not a path relative to it.
    repo = tmp_path / "proj"
    (repo / "shapes").mkdir(parents=True)
    (repo / "shapes" / "__init__.py").write_text("")
    (repo / "shapes" / "base.py").write_text("VALUE = 1\n")
    (repo / "shapes" / "user.py").write_text("from shapes.base import VALUE\n")
    monkeypatch.chdir(tmp_path)
    text = "from shapes.base import VALUE\n"
    change = FileChange("shapes/user.py", "shapes.user", text, text, [], [])
    answers = check_imports(Path("proj"), [change], preload=())
    assert answers["shapes/user.py"] == ("ok", "")


FORK_BOMB = (
    "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
)


def test_a_module_whose_import_is_a_fork_bomb_is_unverified_naming_the_limit(
    tmp_path: Path,
) -> None:
    """Its import runs in the import server's cgroup: stopped at the process limit of the
    service's settings (the ceiling), and the module is blamed with that limit."""
    assert tree_limits_problem(CGROUP_ROOT) is None  # never a fork bomb without the limit
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "bomb.py").write_text("")
    change = FileChange("pkg/bomb.py", "pkg.bomb", "", FORK_BOMB, ["x"], ["A"])
    ceiling = Limits(max_processes=64, cpus=0.5, max_memory_bytes=512 << 20)
    began = time.monotonic()
    answers = check_imports(repo, [change], sandbox=SandboxOptions(ceiling=ceiling), preload=())
    status, detail = answers["pkg/bomb.py"]
    assert status == "unverified", detail
    assert detail.startswith("its import ended the import server: sandbox limit hit (processes)")
    assert time.monotonic() - began < 60  # long before the module's own timeout
