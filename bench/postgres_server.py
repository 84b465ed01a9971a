"""A PostgreSQL server of one's own, for runs that stop and restart the database.

The chaos soak and the degradation tests restart PostgreSQL on purpose; the machine's shared
server (127.0.0.1:5432) serves every other test meanwhile, so they never touch it. A private
cluster (``initdb``, then ``pg_ctl``) starts in about two seconds on a free port, with trust
authentication on loopback only. PostgreSQL refuses to run as root: when this process is root
(CI, the service's container), the server runs as the ``postgres`` account and its folder is
handed to it.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from bench.service import free_port

SERVER_ACCOUNT = "postgres"
START_TIMEOUT_S = 60


def _binaries() -> Path:
    """The newest installed PostgreSQL's bin folder (Debian keeps one per major version)."""
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=_major)
    if not versions:
        found = shutil.which("initdb")
        if found is None:
            raise SystemExit("PostgreSQL's initdb is not installed")
        return Path(found).parent
    return versions[-1].parent


def _major(initdb: Path) -> int:
    name = initdb.parent.parent.name
    return int(name) if name.isdigit() else 0


class PrivatePostgres:
    """A throw-away PostgreSQL cluster in a folder of its own, on a free loopback port."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="repairbot-pg-", dir=root))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = free_port()
        self._bin = _binaries()
        self._as_root = os.geteuid() == 0

    @property
    def url(self) -> str:
        """The SQLAlchemy URL of its ``postgres`` database."""
        return f"postgresql+psycopg://{SERVER_ACCOUNT}@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        command = [str(self._bin / args[0]), *args[1:]]
        if self._as_root:
            command = ["runuser", "-u", SERVER_ACCOUNT, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=START_TIMEOUT_S)
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr[-2000:]}")

    def start(self) -> PrivatePostgres:
        """Create the cluster on the first call, start the server and wait until it answers."""
        if not self.data.exists():
            if self._as_root:
                account = pwd.getpwnam(SERVER_ACCOUNT)
                os.chown(self.root, account.pw_uid, account.pw_gid)
            self._run("initdb", "-D", str(self.data), "-U", SERVER_ACCOUNT, "-A", "trust")
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} "
            f"-c unix_socket_directories={self.root} -c fsync=off -c max_connections=200"
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")
        self._wait_until_answering()
        return self

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: disconnect clients; ``immediate``: as a crash would)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, down_s: float = 0.0) -> None:
        """Stop it as a crash would, stay down ``down_s`` seconds, and start it again."""
        self.stop("immediate")
        time.sleep(down_s)
        self.start()

    def create_database(self, name: str) -> str:
        """Create database ``name``; its SQLAlchemy URL."""
        engine = create_engine(self.url, isolation_level="AUTOCOMMIT")
        with engine.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        engine.dispose()
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def _wait_until_answering(self) -> None:
        engine = create_engine(self.url, connect_args={"connect_timeout": 2})
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while True:
                try:
                    with engine.connect() as connection:
                        connection.execute(text("SELECT 1"))
                    return
                except OperationalError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
        finally:
            engine.dispose()

    def remove(self) -> None:
        """Stop the server if it runs and delete its folder."""
        with contextlib.suppress(RuntimeError):  # it was not running
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
