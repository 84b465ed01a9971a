"""``repairbot serve`` as an operator starts it: what it prints about itself."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.conftest import free_port

REPAIRBOT = shutil.which("repairbot", path=str(Path(sys.executable).parent)) or "repairbot"


def test_celerys_root_warning_is_one_note_with_its_reason(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPAIRBOT_")}
    env["REPAIRBOT_DATA_DIR"] = str(tmp_path / "data")
    log = tmp_path / "serve.err"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [REPAIRBOT, "serve", "--port", str(free_port())], env=env, stderr=err,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            # Both workers (the thread and the verification child) have started by then.
            while b"verification in a child process" not in log.read_bytes():
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            time.sleep(5)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
    text = log.read_text()
    assert "absolutely not recommended" not in text  # Celery's own warning, once per worker
    notes = [line for line in text.splitlines() if line.startswith("note: running as root")]
    assert len(notes) == (1 if os.geteuid() == 0 else 0), text
