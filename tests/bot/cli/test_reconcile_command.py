"""``repairbot reconcile --loop`` (the compose stack's ``beat``) through a PostgreSQL restart: a
failed pass is logged and the loop goes on. A private cluster (``bench.postgres_server``)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from bench.postgres_server import PrivatePostgres
from bot.db.migrate import upgrade
from tests.bot.cli.test_serve_command import REPAIRBOT
from tests.conftest import make_settings


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], after: int = 0) -> int:
    """Wait until ``text`` appears in ``log`` past offset ``after``; where it ends."""
    deadline = time.monotonic() + 120
    while (found := log.read_text().find(text, after)) < 0:
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.1)
    return found + len(text)


def test_the_loop_survives_a_postgresql_restart(tmp_path: Path) -> None:
    server = PrivatePostgres().start()
    try:
        url = server.create_database("reconcile")
        settings = make_settings(tmp_path / "data", database_url=url)
        upgrade(settings.resolved_database_url)
        env = {k: v for k, v in os.environ.items() if not k.startswith("REPAIRBOT_")}
        env |= {
            "REPAIRBOT_DATA_DIR": str(tmp_path / "data"),
            "REPAIRBOT_DATABASE_URL": url,
            "REPAIRBOT_RECONCILE_INTERVAL_S": "0.2",
        }
        log = tmp_path / "reconcile.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [REPAIRBOT, "reconcile", "--loop"], env=env, stdout=out, stderr=out
            )
        try:
            _wait_for(log, "reconciled:", proc)
            server.stop("immediate")
            failed = _wait_for(log, "reconciler pass failed", proc)
            server.start()
            _wait_for(log, "reconciled:", proc, after=failed)  # the same process, on again
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    finally:
        server.remove()
