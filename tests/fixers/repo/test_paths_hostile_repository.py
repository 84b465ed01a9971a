"""Hostile target repositories (issue 17, rows 3 and 4): symlinks out of the tree, huge files.

Each repository is a real git repository of our own making; the sweep and the fixer run as the
real ``repairbot`` console commands in subprocesses, as an operator would run them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixers.repo.paths import FileRefused, read_repo_file, write_repo_file

GOLDEN = Path(__file__).parents[2] / "fixtures" / "sweep" / "golden" / "before"
SCRIPT = Path(sys.executable).with_name("repairbot")
WORKER = """from pkg.base import SpecWorkerBase


class OutsideWorker(SpecWorkerBase):
    def forward(self, input_ids, position_ids, hidden_states, logits,
                attn_metadata, spec_metadata, draft_model, resource_manager=None):
        return logits
"""
MiB = 1 << 20


def _command() -> list[str]:
    return [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "bot.cli"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_command(), *args], capture_output=True, text=True, check=False, timeout=300
    )


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "PATH": "/usr/bin:/bin",
        },
    )


def _commit_all(repo: Path) -> None:
    if not (repo / ".git").exists():
        _git(repo, "init", "--quiet", "--initial-branch", "main")
    _git(repo, "add", "--all")
    _git(repo, "commit", "--quiet", "--no-verify", "-m", "hostile")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(GOLDEN, root)
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the repository that a sweep would fix if it read it."""
    path = tmp_path / "outside" / "evil.py"
    path.parent.mkdir()
    path.write_text(WORKER)
    return path


def _skips(report: dict[str, object]) -> dict[str, str]:
    return {s["path"]: s["reason"] for s in report["skips"]}  # type: ignore[attr-defined, index]


def _violation_paths(report: dict[str, object]) -> set[str]:
    return {v["path"] for v in report["violations"]}  # type: ignore[attr-defined, index]


def test_a_tracked_symlink_out_of_the_repository_is_skipped_not_read(repo, outside):
    (repo / "pkg" / "workers" / "link.py").symlink_to(outside)
    shutil.copy(outside, repo / "pkg" / "workers" / "copy.py")  # the same code, inside: found
    _commit_all(repo)
    proc = _cli("sweep", str(repo), "--json")
    report = json.loads(proc.stdout)
    assert "pkg/workers/copy.py" in _violation_paths(report), proc.stderr
    assert "pkg/workers/link.py" not in _violation_paths(report)
    assert "symlink that leads outside" in _skips(report)["pkg/workers/link.py"]
    human = _cli("sweep", str(repo))
    assert "skipped pkg/workers/link.py: refused: a symlink that leads outside" in human.stdout


def test_fix_write_never_writes_through_a_symlink(repo, outside):
    (repo / "pkg" / "workers" / "link.py").symlink_to(outside)
    shutil.copy(outside, repo / "pkg" / "workers" / "copy.py")
    _commit_all(repo)
    proc = _cli("fix", str(repo), "--write", "--json", "--no-import-check")
    assert proc.returncode == 0, proc.stderr
    written = json.loads(proc.stdout)["written"]
    assert "pkg/workers/copy.py" in written and "pkg/workers/link.py" not in written
    assert "_forward_impl" in (repo / "pkg" / "workers" / "copy.py").read_text()
    assert outside.read_text() == WORKER
    assert (repo / "pkg" / "workers" / "link.py").is_symlink()


def test_a_symlinked_directory_is_not_followed(repo, tmp_path):
    (repo / "pkg" / "ext").mkdir()
    (repo / "pkg" / "ext" / "__init__.py").write_text("")
    (repo / "pkg" / "ext" / "worker.py").write_text("X = 1\n")
    _commit_all(repo)
    # The checkout now has a directory symlink where git tracks files (as a tree changed by
    # hand, or by code that ran in it, looks): every tracked path below it leads outside.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "__init__.py").write_text("")
    (elsewhere / "worker.py").write_text(WORKER)
    shutil.rmtree(repo / "pkg" / "ext")
    (repo / "pkg" / "ext").symlink_to(elsewhere, target_is_directory=True)
    report = json.loads(_cli("sweep", str(repo), "--json").stdout)
    assert "pkg/ext/worker.py" not in _violation_paths(report)
    assert "symlink that leads outside" in _skips(report)["pkg/ext/worker.py"]
    proc = _cli("fix", str(repo), "--write", "--json", "--no-import-check")
    assert "pkg/ext/worker.py" not in json.loads(proc.stdout)["written"]
    assert (elsewhere / "worker.py").read_text() == WORKER


def test_files_are_never_written_through_a_symlink_even_one_inside(tmp_path):
    (tmp_path / "real.py").write_text("A = 1\n")
    (tmp_path / "alias.py").symlink_to(tmp_path / "real.py")
    with pytest.raises(FileRefused, match="symlink"):
        write_repo_file(tmp_path, "alias.py", b"B = 2\n")
    assert (tmp_path / "real.py").read_text() == "A = 1\n"
    assert read_repo_file(tmp_path, "alias.py") == b"A = 1\n"  # reading inside is fine
    write_repo_file(tmp_path, "real.py", b"B = 2\n")
    assert (tmp_path / "real.py").read_text() == "B = 2\n"


def _big_module(path: Path, size: int) -> None:
    """A syntactically valid module of about ``size`` bytes that names the contract's base:
    the sweep would parse it (its AST is many times its size) if nothing stopped it."""
    line = b"    1234567890, 1234567890, 1234567890, 1234567890, 1234567890, 1234567890,\n"
    with path.open("wb") as out:
        out.write(b"from pkg.base import SpecWorkerBase\n\n\nclass Big(SpecWorkerBase):\n")
        out.write(b"    table = [\n")
        for _ in range(size // len(line)):
            out.write(b"    " + line)
        out.write(b"    ]\n")


def _peak_rss_mib(*args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run the CLI from a fresh interpreter and return the CLI process's peak RSS.

    The intermediate interpreter has no other children, so RUSAGE_CHILDREN is this command's
    alone (the pytest process has run many other subprocesses).
    """
    measure = (
        "import json, resource, subprocess, sys\n"
        "proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(json.dumps({'peak_kib': peak, 'rc': proc.returncode, 'out': proc.stdout,"
        " 'err': proc.stderr}))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", measure, *_command(), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    result = json.loads(run.stdout)
    completed = subprocess.CompletedProcess(args, result["rc"], result["out"], result["err"])
    return result["peak_kib"] / 1024, completed


def test_a_50_mib_module_is_skipped_with_its_size_and_memory_stays_small(repo):
    _big_module(repo / "pkg" / "workers" / "huge.py", 50 * MiB)
    _commit_all(repo)
    size = (repo / "pkg" / "workers" / "huge.py").stat().st_size
    assert size > 49 * MiB
    peak, proc = _peak_rss_mib("sweep", str(repo), "--json")
    report = json.loads(proc.stdout)
    reason = _skips(report)["pkg/workers/huge.py"]
    assert f"{size:,} bytes" in reason and "2,097,152-byte cap" in reason
    assert "pkg/workers/nvtx.py" in _violation_paths(report)  # the rest was swept
    # Before the cap this sweep peaked at 14 GB; a whole interpreter with LibCST is ~100 MiB.
    assert peak < 400, f"sweep peaked at {peak:.0f} MiB"
    peak, proc = _peak_rss_mib("fix", str(repo), "--write", "--json", "--no-import-check")
    assert proc.returncode == 0, proc.stderr
    assert "pkg/workers/nvtx.py" in json.loads(proc.stdout)["written"]
    assert peak < 400, f"fix --write peaked at {peak:.0f} MiB"


def test_the_cap_is_configurable_in_repairbot_toml(repo):
    size = (repo / "pkg" / "workers" / "nvtx.py").stat().st_size
    (repo / ".repairbot.toml").write_text(f"max_file_bytes = {size - 1}\n")
    report = json.loads(_cli("sweep", str(repo), "--json").stdout)
    assert (
        f"{size:,} bytes, over the {size - 1:,}-byte cap" in _skips(report)["pkg/workers/nvtx.py"]
    )
    assert "pkg/workers/nvtx.py" not in _violation_paths(report)
    (repo / ".repairbot.toml").write_text("max_file_bytes = -3\n")
    report = json.loads(_cli("sweep", str(repo), "--json").stdout)
    assert any("max_file_bytes" in e for e in report["config_errors"])


def test_a_config_file_symlinked_out_of_the_repository_is_not_read(repo, tmp_path):
    secret = tmp_path / "secret.toml"
    secret.write_text('exclude = ["pkg/workers/*"]\n')
    (repo / ".repairbot.toml").symlink_to(secret)
    report = json.loads(_cli("sweep", str(repo), "--json").stdout)
    assert "pkg/workers/nvtx.py" in _violation_paths(report)  # the exclude was not applied
    assert any("symlink" in e for e in report["config_errors"])
