"""Expected failures of the command line end in one line and an exit status, never a traceback
(``--debug`` shows it): the real console script, with the real environment it would meet."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPAIRBOT = shutil.which("repairbot", path=str(Path(sys.executable).parent)) or "repairbot"


def _run(*args: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("REPAIRBOT_")}
    environ |= {"REPAIRBOT_DATA_DIR": str(tmp_path / "data"), **env}
    return subprocess.run(
        [REPAIRBOT, *args], cwd=tmp_path, env=environ, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed once the block ends: nothing listens


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, proc.stdout + proc.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in lines[0]
    return lines[0]


def test_a_service_that_is_not_there_is_one_line_and_exit_3(tmp_path: Path) -> None:
    port = _closed_port()
    proc = _run("demo", "--url", f"http://127.0.0.1:{port}", tmp_path=tmp_path)
    assert proc.returncode == 3
    line = _one_error_line(proc)
    assert f"cannot reach http://127.0.0.1:{port}" in line and "repairbot serve" in line
    assert not (tmp_path / "data" / "demo").exists()  # nothing built for nothing


def test_a_list_setting_that_is_not_json_says_so(tmp_path: Path) -> None:
    proc = _run("fix", ".", tmp_path=tmp_path, REPAIRBOT_REPOSITORY_ROOTS="/tmp/x")
    assert proc.returncode == 2
    line = _one_error_line(proc)
    assert "REPAIRBOT_REPOSITORY_ROOTS cannot be read" in line
    assert """REPAIRBOT_REPOSITORY_ROOTS='["/srv/repos"]'""" in line


@pytest.mark.parametrize("environment", ["production", "test"])
def test_serve_outside_development_with_dev_secrets_is_one_line(
    tmp_path: Path, environment: str
) -> None:
    proc = _run("serve", tmp_path=tmp_path, REPAIRBOT_ENVIRONMENT=environment)
    assert proc.returncode == 2
    line = _one_error_line(proc)
    assert "set real secrets outside development" in line
    assert "REPAIRBOT_GITHUB_WEBHOOK_SECRET, REPAIRBOT_CI_TOKEN" in line


def test_a_data_dir_the_process_may_not_create_is_one_line(tmp_path: Path) -> None:
    # /sys refuses new entries even to root: the same answer a user without rights gets.
    proc = _run("reconcile", tmp_path=tmp_path, REPAIRBOT_DATA_DIR="/sys/kernel/repairbot-x")
    assert proc.returncode == 3
    assert "permission denied: /sys/kernel/repairbot-x" in _one_error_line(proc)


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    proc = _run("fix", ".", "--debug", tmp_path=tmp_path, REPAIRBOT_REPOSITORY_ROOTS="/tmp/x")
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr or "SettingsError" in proc.stderr
