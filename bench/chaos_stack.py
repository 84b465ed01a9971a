"""The chaos soak's processes (bench/chaos.py): a PostgreSQL and a Redis of its own, two API
replicas, three workers, and the faults done to them.

Every process is real and started as an operator would start it: ``repairbot serve --no-worker``
(the API and the reconciler loop) on two ports, ``repairbot worker -Q repair,cpu`` three times.
Each fault is done the hard way (SIGKILL, SIGSTOP, a crash-stop of PostgreSQL, Redis killed with
nothing saved) and returns the line the report prints for it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from bench.harness import local_url, serve_command
from bench.postgres_server import PrivatePostgres
from bench.service import free_port, start, stop
from bench.soak import start_redis, start_worker

REPLICAS = 2
WORKERS = 3
# Work a worker is in the middle of: a run being repaired, or a verification running its tests.
BUSY_WORK = (
    "SELECT (SELECT count(*) FROM repair_runs WHERE state IN ('classified','swept','patched'))"
    " + (SELECT count(*) FROM verifications WHERE state = 'running')"
)


def _now() -> str:
    return time.strftime("%H:%M:%S")


@dataclass
class ChaosStack:
    """The running processes, and how to hurt and restore each."""

    root: Path
    env: dict[str, str]
    postgres: PrivatePostgres
    redis: subprocess.Popen[bytes]
    redis_port: int
    api_ports: list[int] = field(default_factory=list)
    apis: list[subprocess.Popen[bytes]] = field(default_factory=list)
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    started_workers: int = 0

    @property
    def urls(self) -> list[str]:
        """The API replicas' base URLs (traffic is spread over them)."""
        return [local_url(port) for port in self.api_ports]

    def launch(self, replicas: int = REPLICAS, workers: int = WORKERS) -> ChaosStack:
        """Start the API replicas (each with its reconciler loop) and the workers."""
        for index in range(replicas):
            port = free_port()
            self.api_ports.append(port)
            self.apis.append(self._start_api(index, port))
        for _ in range(workers):
            self.workers.append(self._start_worker())
        return self

    def _start_api(self, index: int, port: int) -> subprocess.Popen[bytes]:
        log = self.root / f"api{index}-{_now().replace(':', '')}.log"
        return start(serve_command(port, "--no-worker"), self.env, log, f"{local_url(port)}/readyz")

    def _start_worker(self) -> subprocess.Popen[bytes]:
        name = f"w{self.started_workers}"
        self.started_workers += 1
        return start_worker(self.env, self.root / f"{name}.log", name)

    def kill_worker_mid_repair(self, wait_s: float = 30) -> str:
        """SIGKILL worker 0 once some run is being repaired or verified (or after ``wait_s``),
        and start a new worker in its place."""
        engine = create_engine(self.env["REPAIRBOT_DATABASE_URL"])
        deadline = time.monotonic() + wait_s
        busy = 0
        while time.monotonic() < deadline:
            try:
                with engine.connect() as connection:
                    busy = int(connection.execute(text(BUSY_WORK)).scalar_one())
            except OperationalError:  # a fault may have the database down: try again
                busy = 0
            if busy:
                break
            time.sleep(0.2)
        engine.dispose()
        os.killpg(self.workers[0].pid, signal.SIGKILL)
        self.workers[0].wait()
        self.workers[0] = self._start_worker()
        return f"{_now()} worker SIGKILLed with {busy} runs or verifications in progress; replaced"

    def kill_api_replica(self, index: int = 0) -> str:
        """SIGKILL API replica ``index`` (its requests in flight are cut), start it again."""
        os.killpg(self.apis[index].pid, signal.SIGKILL)
        self.apis[index].wait()
        killed = _now()
        self.apis[index] = self._start_api(index, self.api_ports[index])
        return f"{killed} API replica {index} SIGKILLed mid-burst, back at {_now()}"

    def restart_redis(self, down_s: float = 3) -> str:
        """Kill Redis (nothing persisted: every queued message is gone) and start it again."""
        self.redis.kill()
        self.redis.wait()
        killed = _now()
        time.sleep(down_s)
        self.redis = start_redis(self.redis_port)
        return f"{killed} Redis killed (nothing persisted), back at {_now()}"

    def restart_postgres(self, down_s: float = 5) -> str:
        """Crash-stop PostgreSQL (every connection cut), keep it down ``down_s``, start it."""
        killed = _now()
        self.postgres.restart(down_s)
        return f"{killed} PostgreSQL crash-stopped, back at {_now()}"

    def pause_worker(self, seconds: float, index: int = 1) -> str:
        """SIGSTOP worker ``index`` for ``seconds`` (past the broker's visibility timeout and
        the reconciler's staleness), then SIGCONT: it wakes up holding work others took over."""
        process = self.workers[index]
        os.killpg(process.pid, signal.SIGSTOP)
        paused = _now()
        time.sleep(seconds)
        os.killpg(process.pid, signal.SIGCONT)
        return f"{paused} worker {index} paused (SIGSTOP) for {seconds:.0f} s, resumed at {_now()}"

    def ready(self) -> dict[str, int]:
        """Each replica's /readyz status code (0: no answer)."""
        codes = {}
        for url in self.urls:
            try:
                codes[url] = httpx.get(f"{url}/readyz", timeout=5).status_code
            except httpx.HTTPError:
                codes[url] = 0
        return codes

    def stop(self, *, keep_database: bool = False) -> None:
        """Stop workers and replicas, then Redis and PostgreSQL (its folder removed unless
        ``keep_database``)."""
        for process in self.workers:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGCONT)
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.workers:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        for api in self.apis:
            if api.poll() is None:
                stop(api)
        self.redis.terminate()
        if keep_database:
            self.postgres.stop()
            print(f"PostgreSQL's folder kept: {self.postgres.data}")
        else:
            self.postgres.remove()
