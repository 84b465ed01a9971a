"""``repairbot config check`` and what an invalid ``.repairbot.toml`` does to ``check``,
``sweep`` and ``fix``: the real console script, real files, real git repositories."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.fixers.git_repos import commit_all, worker_repo, write

REPAIRBOT = shutil.which("repairbot", path=str(Path(sys.executable).parent)) or "repairbot"

# What a new user typed (issue: five errors, of which two were reported before).
INVALID = """\
pythn = "3.10"
python = 3.10

[weird]
x = 1

[verify]
commnd = "make test"
command = 5

[repairbot]
enabled = "no"

[autonomy]
default = "yolo"
"""


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [REPAIRBOT, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def test_every_problem_is_reported_at_once_with_its_line(tmp_path: Path) -> None:
    (tmp_path / ".repairbot.toml").write_text(INVALID)
    proc = _run("config", "check", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line.removeprefix("error: ") for line in proc.stdout.splitlines()]
    assert lines[:-1] == [
        ".repairbot.toml:1: pythn: unknown key (did you mean 'python'?)",
        '.repairbot.toml:2: python: must be a string like "3.10" (unquoted, 3.1 is a number)',
        ".repairbot.toml:4: weird: unknown table (allowed: python, test_dirs, exclude, "
        "max_file_bytes, contract, verify, fan_out, repairbot, autonomy, learned)",
        ".repairbot.toml:8: verify.commnd: unknown key (did you mean 'command'?)",
        ".repairbot.toml:9: verify.command: must be a string, got 5",
        ".repairbot.toml:12: repairbot.enabled: must be true or false, got 'no'",
        ".repairbot.toml:15: autonomy.default: must be one of 'report', 'suggest', 'pr' or "
        "'pr+verify', got 'yolo'",
    ]
    assert lines[-1] == "7 problem(s)"


def test_a_valid_file_and_a_missing_one_are_fine(tmp_path: Path) -> None:
    assert "the defaults apply" in _run("config", "check", str(tmp_path), cwd=tmp_path).stdout
    (tmp_path / ".repairbot.toml").write_text('python = "3.10"\n[autonomy]\ndefault = "pr"\n')
    proc = _run("config", "check", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == ".repairbot.toml: ok"


def test_semantic_problems_of_valid_shapes_are_reported_too(tmp_path: Path) -> None:
    (tmp_path / ".repairbot.toml").write_text(
        '[[contract]]\nbase = "Shape"\nforbidden = "area"\n\n'
        '[autonomy.signatures]\n"no-such-signature" = "report"\n'
    )
    proc = _run("config", "check", cwd=tmp_path)
    assert proc.returncode == 1
    assert "'hook' required for Shape" in proc.stdout
    assert "unknown signature 'no-such-signature'" in proc.stdout


def test_sweep_fix_and_check_exit_3_on_an_invalid_configuration(tmp_path: Path) -> None:
    repo = worker_repo(tmp_path / "repo", old_violation=False)
    write(repo, ".repairbot.toml", "[verify]\ncommnd = 'make test'\n")
    commit_all(repo, "a typo in the configuration")
    for args in (("sweep", "."), ("fix", ".", "--no-import-check"), ("check",)):
        proc = _run(*args, cwd=repo)
        assert proc.returncode == 3, (args, proc.stdout, proc.stderr)
        assert "verify.commnd: unknown key (did you mean 'command'?)" in proc.stdout
    write(repo, ".repairbot.toml", "[verify]\ncommand = 'make test'\n")
    assert [_run(*a, cwd=repo).returncode for a in (("sweep", "."), ("check",))] == [0, 0]
