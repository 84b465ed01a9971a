"""Leased run folders: a killed maker's folder is removed by the next maker, a live one's kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from fixers.sandbox.run_dirs import UNLEASED_GRACE_S, make_run_dir, remove_orphans

MAKER = (
    "import sys, time\n"
    "from fixers.sandbox.run_dirs import make_run_dir\n"
    "made = make_run_dir(sys.argv[1])\n"
    "print(made.path, flush=True)\n"
    "time.sleep(600)\n"
)


def _maker(prefix: str, tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    child = subprocess.Popen(
        [sys.executable, "-c", MAKER, prefix],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
        cwd=Path(__file__).parents[3],
    )
    assert child.stdout is not None
    return child, Path(child.stdout.readline().strip())


def test_a_killed_makers_folder_goes_and_a_live_ones_stays(tmp_path: Path) -> None:
    prefix = "repairbot-test-run-"
    killed, killed_dir = _maker(prefix, tmp_path)
    alive, alive_dir = _maker(prefix, tmp_path)
    try:
        (killed_dir / "probe.log").write_text("left behind")
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        assert killed_dir.is_dir()  # nothing ran at its death
        assert remove_orphans(prefix, tmp_path) == [killed_dir]
        assert not killed_dir.exists() and not Path(f"{killed_dir}.lease").exists()
        assert alive_dir.is_dir()
    finally:
        alive.kill()
        alive.wait()


def test_release_removes_the_folder_and_its_lease_once(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    made = make_run_dir("repairbot-test-run-")
    assert made.path.parent == tmp_path and Path(f"{made.path}.lease").is_file()
    made.release()
    made.release()
    assert list(tmp_path.iterdir()) == []


def test_an_unleased_folder_is_left_for_its_grace_period(tmp_path: Path) -> None:
    fresh = tmp_path / "repairbot-test-run-fresh"
    old = tmp_path / "repairbot-test-run-old"
    fresh.mkdir()
    old.mkdir()
    past = time.time() - UNLEASED_GRACE_S - 60
    os.utime(old, (past, past))
    assert remove_orphans("repairbot-test-run-", tmp_path) == [old]
    assert fresh.is_dir()
