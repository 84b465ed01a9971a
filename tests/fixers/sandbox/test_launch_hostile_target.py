"""A hostile target against the real sandbox (real bubblewrap, real processes, as root here).

Each escape the issue reported is tried by ``hostile.py`` from inside the sandbox; every one must
fail, and the host must show no trace. The control runs the same code unconfined, as the import
probe used to, and sees the escapes work: the detectors can fail.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixers.sandbox.test_launch_tree_limits import groups_of, remove_groups

SERVICE = Path(__file__).with_name("service.py")  # its limits: memory 512 MiB, 128 processes
SECRET = f"repairbot-secret-{uuid.uuid4().hex}"
# Judged by what reached the host: inside, a write may land in the private /tmp or /dev/shm.
WRITES = {"write_outside", "write_home", "write_git_hook", "shm_write"}


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port listening on the host's loopback, as the service's API or PostgreSQL do."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def _data_dir(folder: Path) -> list[str]:
    folder.mkdir(parents=True)
    with sqlite3.connect(folder / "repairbot.db") as db:
        db.execute("create table secrets (value text)")
        db.execute("insert into secrets values (?)", (SECRET,))
    (folder / ".env").write_text(f"REPAIRBOT_CI_TOKEN={SECRET}\n")
    return [str(folder / "repairbot.db"), str(folder / ".env")]


def _repo(folder: Path) -> Path:
    (folder / "pkg").mkdir(parents=True)
    (folder / "pkg" / "__init__.py").write_text("VALUE = 1\n")
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def _shm_secret() -> str:
    name = f"hostile-{uuid.uuid4().hex}"
    Path("/dev/shm", name).write_text(SECRET)
    return name


def _config(tmp_path: Path, run_dir: Path, port: int, **more: object) -> dict[str, object]:
    repo = Path(str(more.pop("repo", ""))) if "repo" in more else _repo(tmp_path / "repo")
    return {
        "secret": SECRET,
        "parent_pid": 0,  # the service's own pid: the stand-in service fills it in
        "data_files": _data_dir(tmp_path / "data"),
        "outside": str(tmp_path / "outside.txt"),
        "git_hook": str(repo / ".git" / "hooks" / "pre-commit"),
        "port": port,
        "shm": _shm_secret(),
        "forks": 300,
        "allocate_gib": 20,
        "touch_mib": 1024,  # past service.py's memory limit (512 MiB), never past this
        "results": str(run_dir / "results.json"),
        **more,
        "repo": str(repo),
    }


def _serve(
    mode: str,
    run_dir: Path,
    config: dict[str, object],
    config_path: Path | None = None,
    path: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start the stand-in service with the secret in its environment (and so in /proc)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    config_path = config_path or run_dir / "config.json"  # where the sandbox can read it
    config_path.write_text(json.dumps(config))
    env = {**os.environ, "REPAIRBOT_CI_TOKEN": SECRET, "REPAIRBOT_GITHUB_WEBHOOK_SECRET": SECRET}
    if path is not None:
        env["PATH"] = path
    return subprocess.Popen(
        [sys.executable, str(SERVICE), mode, str(run_dir), str(config_path)], env=env
    )


def _attack(mode: str, tmp_path: Path, port: int) -> tuple[dict[str, bool], dict[str, object]]:
    run_dir = tmp_path / "run"
    config = _config(tmp_path, run_dir, port, control=mode == "plain")
    assert _serve(mode, run_dir, config).wait(timeout=600) == 0
    return json.loads((run_dir / "results.json").read_text()), config


def _host_traces(config: dict[str, object]) -> list[str]:
    paths = [str(config["outside"]), str(config["git_hook"]), f"/dev/shm/{config['shm']}-w"]
    paths += [str(p) for p in Path("/root").glob("hostile-*.txt")]
    return [p for p in paths if Path(p).exists()]


def _clean(config: dict[str, object]) -> None:
    for path in [*_host_traces(config), f"/dev/shm/{config['shm']}"]:
        Path(path).unlink(missing_ok=True)


def test_hostile_code_escapes_nothing_from_the_sandbox(tmp_path: Path, listener: int) -> None:
    results, config = _attack("sandboxed", tmp_path, listener)
    try:
        assert set(results) >= {"parent_environ", "network", "fork_bomb", "allocate"}
        assert [name for name, worked in results.items() if worked and name not in WRITES] == []
        assert _host_traces(config) == []
        isolation = (tmp_path / "run" / "isolation.txt").read_text()
        assert isolation.startswith("bubblewrap")
    finally:
        _clean(config)


def test_control_the_same_code_unconfined_escapes(tmp_path: Path, listener: int) -> None:
    results, config = _attack("plain", tmp_path, listener)
    try:
        escaped = {name for name, worked in results.items() if worked}
        expected = {"parent_environ", "any_environ", "data_files", "write_outside"}
        expected |= {"write_git_hook", "network", "shm_read", "shm_write"}
        if os.geteuid() == 0:
            expected |= {"write_home", "capabilities"}
        assert escaped == expected
        assert _host_traces(config)  # and they show on the host
    finally:
        _clean(config)


def _probe(tmp_path: Path, port: int, *, control: bool) -> tuple[str, set[str], dict[str, object]]:
    """Row 1 of the issue: hostile code in a package ``__init__``, run by the import evidence.

    The data dir lies *inside* the repository here (``repairbot fix`` on the service's own
    checkout) and must still be hidden. The control has no bubblewrap and allows running
    unconfined, as the probe ran before.
    """
    run_dir = tmp_path / "run"
    repo = _repo(tmp_path / "repo")
    config = _config(tmp_path, run_dir, port, repo=str(repo), control=control)
    config["data_files"] = _data_dir(repo / ".repairbot")
    config["hidden"] = [str(repo / ".repairbot")]
    path = None
    if control:
        (tmp_path / "bin").mkdir()
        path = str(tmp_path / "bin")  # no bwrap on it
    # The probe sees the repository (read-only) and nothing else of ours: the config goes there.
    service = _serve("probe", run_dir, config, repo / "hostile.json", path)
    assert service.wait(timeout=600) == 0
    status, detail = json.loads((run_dir / "answer.json").read_text())["pkg/__init__.py"]
    assert status == "failed", detail
    said, _, escaped = detail.partition("RuntimeError: HOSTILE escaped=")
    return said, set(escaped.split(",")) - {"none"}, config


def test_the_import_probe_runs_module_code_in_the_sandbox(tmp_path: Path, listener: int) -> None:
    said, escaped, config = _probe(tmp_path, listener, control=False)
    try:
        assert said == "" and escaped - WRITES == set()
        assert _host_traces(config) == []
    finally:
        _clean(config)


def test_control_the_unconfined_import_probe_escapes_and_says_so(
    tmp_path: Path, listener: int
) -> None:
    said, escaped, config = _probe(tmp_path, listener, control=True)
    try:
        assert said == "NOT SANDBOXED; "
        assert {"parent_environ", "data_files", "write_git_hook", "network"} <= escaped
        assert _host_traces(config)
    finally:
        _clean(config)


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _wait_until(condition: object, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return True
        time.sleep(0.1)
    return False


def test_target_processes_die_with_the_service(tmp_path: Path) -> None:
    """Row 13: an import probe survived its parent's kill -9. Nothing sandboxed may: the
    killed service's cgroup is left empty (the next service removes it, once it is old)."""
    marker = f"hostile-sleeper-{uuid.uuid4().hex}"
    run_dir = tmp_path / "run"
    service = _serve("sleep", run_dir, {"marker": marker})
    try:
        assert _wait_until(lambda: (run_dir / "up").exists(), 120)
        assert _processes_with(marker)  # the sleeper runs (so the check below can fail)
        assert groups_of(service.pid)  # in a cgroup of its own
        os.kill(service.pid, signal.SIGKILL)
        service.wait()
        assert _wait_until(lambda: not _processes_with(marker), 30), _processes_with(marker)
    finally:
        for pid in _processes_with(marker):
            os.kill(pid, signal.SIGKILL)
        assert remove_groups(groups_of(service.pid)) == []  # nothing was left in it
