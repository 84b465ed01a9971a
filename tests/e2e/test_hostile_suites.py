"""Hostile test suites against real workers: each ends in a verdict naming the limit it hit,
while a verification beside it on the same host finishes, the worker lives on, and its next
verification succeeds.

Real parts throughout: the API (``repairbot serve --no-worker``), two ``repairbot worker``
processes on Redis and one SQLite database, real git repositories, pytest in the real sandbox in
a cgroup per command. The limits are the settings' (``REPAIRBOT_SANDBOX_*``), small because this
machine is shared; each hostile test also stops itself before it could do harm, and then fails.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from dataclasses import dataclass

import httpx
import pytest

from bot.db.migrate import upgrade
from bot.db.models import Verification
from bot.queue.celery_app import configure_celery
from fixers.sandbox import CGROUP_ROOT, tree_limits_problem
from tests.bot.runner.conftest import OPS_FIXED, TinyRepo, tiny_repo  # noqa: F401 - the fixture
from tests.conftest import make_settings
from tests.e2e.conftest import Service
from tests.e2e.test_verify_routing import _request, _seed_fix, _wait_done
from tests.fixers.sandbox.test_launch import _processes_with
from tests.fixers.sandbox.test_launch_tree_limits import groups_of

pytestmark = pytest.mark.e2e

LIMITS = {  # what one verification's test run may use on this host
    "sandbox_memory_bytes": str(512 << 20),
    "sandbox_processes": "64",
    "sandbox_cpus": "1",
    "sandbox_disk_bytes": str(64 << 20),
    "verify_timeout_s": "20",
    "verify_reruns": "0",
}
HEADER = (
    "import os, sys, time\n\nfrom calc import ops  # the fix's module: the selection runs it\n\n\n"
)
SUITES = {
    "memory": HEADER
    + (
        "def test_allocates_50_gb():\n"
        "    chunks = []\n"
        "    for number in range((50 << 30) // (64 << 20)):  # each page touched\n"
        "        chunks.append(b'\\x01' * (64 << 20))\n"
        "        assert number * 64 < 2048, '2 GiB in and nothing stopped it'\n"
    ),
    "processes": HEADER
    + (
        "def test_fork_bomb():\n"
        "    while True:\n"
        "        try:\n"
        "            os.fork()\n"
        "        except OSError:\n"
        "            pass\n"
    ),
    "timeout": HEADER + "def test_sleeps_forever():\n    time.sleep(10**6)\n",
    "disk": HEADER
    + (
        "def test_fills_the_disk(tmp_path):\n"
        "    block = b'\\x01' * (1 << 20)\n"
        "    for number in range(256):  # 2 GiB at most, in 8 MiB files\n"
        "        with open(tmp_path / f'fill-{number}', 'wb') as stream:\n"
        "            for _ in range(8):\n"
        "                stream.write(block)\n"
        "    raise AssertionError('2 GiB written and nothing stopped it')\n"
    ),
}
DAEMON = HEADER + (
    "def test_daemonises_a_sleeper():\n"
    "    if os.fork() == 0:\n"
    "        os.setsid()  # out of the process group and the session\n"
    "        if os.fork() == 0:\n"
    "            code = 'import time; time.sleep(600)'\n"
    "            os.execv(sys.executable, [sys.executable, '-c', code, '{marker}'])\n"
    "        os._exit(0)\n"
    "    time.sleep(1)\n"
)


@dataclass
class Host:
    """One host's deployment: the API, the worker under test, and a neighbour worker."""

    service: Service
    settings: object

    def worker_pid(self) -> int:
        return self.service.processes["host"].pid

    def alive(self) -> bool:
        return self.service.processes["host"].poll() is None


@pytest.fixture
def host(tmp_path, make_service) -> Host:
    """The API and two workers on one host: ``host`` (queue cpu) runs the hostile suites,
    ``neighbour`` (queue gpu.H100_PCIe) a good verification at the same time."""
    assert tree_limits_problem(CGROUP_ROOT) is None, "a fork bomb needs the process limit in force"
    broker = f"redis://127.0.0.1:6379/{uuid.uuid4().int % 5 + 1}"
    subprocess.run(["redis-cli", "-u", broker, "FLUSHDB"], check=True, capture_output=True)
    database = f"sqlite:///{tmp_path / 'shared.db'}"
    service = make_service(
        database_url=database, broker_url=broker, embedded_worker="false", **LIMITS
    )
    settings = make_settings(tmp_path / "data", database_url=database, broker_url=broker)
    upgrade(database)
    configure_celery(settings)
    service.start_api("--no-worker")
    service.start("host", "worker", "-Q", "cpu", "-n", "host@%h")
    service.start("neighbour", "worker", "-Q", "gpu.H100_PCIe", "-n", "neighbour@%h")
    return Host(service, settings)


def _hostile_then_good(host: Host, repo: TinyRepo, test_file: str) -> tuple[Verification, ...]:
    """The hostile suite on ``host`` while a good fix verifies on ``neighbour``; then the next
    good verification on ``host``. The three rows, in that order."""
    settings = host.settings
    hostile_fix = _seed_fix(
        settings, repo, repo.commit({"calc/ops.py": OPS_FIXED, "tests/test_hostile.py": test_file})
    )
    good_fix = _seed_fix(settings, repo, repo.commit({"calc/ops.py": OPS_FIXED}))
    hostile = _request(settings, hostile_fix, gpu_types=[])
    beside = _request(settings, good_fix, gpu_types=["H100_PCIe"])
    first = _wait_done(settings, [hostile, beside], timeout_s=300)
    assert host.alive(), host.service.logs()
    after = _request(settings, good_fix, gpu_types=[])
    (next_one,) = _wait_done(settings, [after], timeout_s=300)
    return (*first, next_one)


def _assert_the_host_carried_on(host: Host, rows: tuple[Verification, ...]) -> None:
    _, beside, next_one = rows
    logs = host.service.logs()
    assert beside.state == "done" and beside.verdict == "fixed", logs
    assert beside.results["worker"].startswith("neighbour@")
    assert next_one.state == "done" and next_one.verdict == "fixed", logs
    assert next_one.options["runner"]["pid"] == rows[0].options["runner"]["pid"]  # same worker
    assert host.alive() and rows[0].options["runner"]["pid"] == host.worker_pid()
    assert groups_of(host.worker_pid()) == []  # every cgroup it made is gone
    assert httpx.get(f"{host.service.url}/readyz", timeout=30).status_code == 200  # the service


@pytest.mark.parametrize("limit", list(SUITES))
def test_a_hostile_suite_ends_in_a_verdict_naming_its_limit(host, tiny_repo, limit):  # noqa: F811
    rows = _hostile_then_good(host, tiny_repo, SUITES[limit])
    hostile = rows[0]
    assert hostile.state == "error" and hostile.verdict is None, host.service.logs()
    assert hostile.reason.startswith(f"sandbox limit hit ({limit}): the tests' process tree ")
    assert hostile.results["limit"] == limit
    assert "whole tree in a cgroup" in hostile.results["isolation"]
    _assert_the_host_carried_on(host, rows)


def test_a_sleeper_daemonised_out_of_the_process_group_dies_with_its_test_run(
    host,
    tiny_repo,  # noqa: F811
):
    marker = f"hostile-daemon-{uuid.uuid4().hex}"
    rows = _hostile_then_good(host, tiny_repo, DAEMON.format(marker=marker))
    hostile = rows[0]
    assert hostile.state == "done" and hostile.verdict == "fixed", host.service.logs()
    time.sleep(1)
    assert _processes_with(marker) == []  # nothing it started outlived its test run
    _assert_the_host_carried_on(host, rows)
