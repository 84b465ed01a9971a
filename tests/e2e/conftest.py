"""Real processes for end-to-end tests: `repairbot serve`, `repairbot worker`, a failing target."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.cli.demo_target import build_target, run_tests
from bot.intake.webhook_auth import sign
from tests import held_repair
from tests.conftest import CI_TOKEN, SECRET
from tests.fakes.github_api import TOKEN, FakeGitHub

REPAIRBOT = str(Path(sys.executable).parent / "repairbot")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Service:
    """A running repairbot deployment: API (maybe with the embedded worker) plus extra workers."""

    env: dict[str, str]
    data_dir: Path
    port: int
    log_dir: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    # What runs ``repairbot ARGS``: the installed script, or a test-side launcher around it.
    launcher: list[str] = field(default_factory=lambda: [REPAIRBOT])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = (self.log_dir / f"{name}.log").open("ab")
        process = subprocess.Popen(
            [*self.launcher, *args],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes[name] = process
        return process

    def start_api(self, *extra: str) -> None:
        self.start("api", "serve", "--port", str(self.port), *extra)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.processes["api"].poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError(f"API did not start: {(self.log_dir / 'api.log').read_text()[-3000:]}")

    def hold_repairs(self, pause: Path) -> None:
        """Start every later process through ``tests.held_repair``: each repair waits after its
        patch while ``pause`` exists (why: see that module)."""
        self.launcher = held_repair.command(pause)
        self.env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(held_repair.ROOT), self.env.get("PYTHONPATH")) if p
        )

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        process = self.processes.pop(name)
        os.killpg(process.pid, sig)
        process.wait(timeout=30)

    def stop_all(self) -> None:
        for name in list(self.processes):
            self.kill(name, signal.SIGTERM if name == "api" else signal.SIGKILL)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30)

    def webhook(self, event: str, payload: dict[str, Any], delivery: str) -> None:
        """Deliver ``payload`` as GitHub would: signed with the test secret, raising on refusal."""
        body = json.dumps(payload).encode()
        httpx.post(
            f"{self.url}/webhooks/github",
            content=body,
            timeout=30,
            headers={
                "X-GitHub-Event": event,
                "X-GitHub-Delivery": delivery,
                "Content-Type": "application/json",
                "X-Hub-Signature-256": sign(SECRET.encode(), body),
            },
        ).raise_for_status()

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text()[-4000:]}" for p in sorted(self.log_dir.glob("*.log"))
        )


def post_pipeline_failure(
    client: httpx.Client,
    console: bytes,
    *,
    repository: str,
    build: int,
    head: str,
    pr: int | None = None,
) -> dict[str, Any]:
    """A failed ``L0_MergeRequest_PR`` build of ``head`` posted as Jenkins would (a PR pipeline's
    when ``pr`` is given); the API's answer."""
    params: dict[str, Any] = {
        "pipeline": "L0_MergeRequest_PR",
        "build_number": build,
        "repository": repository,
        "head_sha": head,
        "base_ref": "main",
        "stage": "H100_PCIe-PyTorch-1",
        "build_url": f"https://jenkins.invalid/job/L0_MergeRequest_PR/{build}/",
        **({"pr_number": pr} if pr is not None else {}),
    }
    answer = client.post(
        "/api/v1/ci-failures",
        params=params,
        content=console,
        headers={"Authorization": f"Bearer {CI_TOKEN}"},
    )
    answer.raise_for_status()
    result: dict[str, Any] = answer.json()
    return result


def github_service(
    make_service: Callable[..., Service], github_api: FakeGitHub, **extra: str
) -> Service:
    """A started API whose GitHub is the double (writes unpaced), with ``extra`` settings."""
    built = make_service(
        github_api_url=github_api.url,
        github_token=TOKEN,
        github_git_url_template=github_api.git_url_template,
        github_seconds_between_writes="0",
        **extra,
    )
    built.start_api()
    return built


@pytest.fixture
def make_service(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., Service]]:
    """Build a Service with extra ``REPAIRBOT_*`` settings; every process is stopped afterwards."""
    made: list[Service] = []

    def build(**settings: str) -> Service:
        data_dir = tmp_path / "data"
        log_dir = tmp_path / "logs"
        log_dir.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("REPAIRBOT_")}
        env.update(
            {
                "REPAIRBOT_ENVIRONMENT": "test",
                "REPAIRBOT_DATA_DIR": str(data_dir),
                "REPAIRBOT_GITHUB_WEBHOOK_SECRET": SECRET,
                "REPAIRBOT_CI_TOKEN": CI_TOKEN,
                "REPAIRBOT_RECONCILE_INTERVAL_S": "0.5",
                "REPAIRBOT_STALE_AFTER_S": "3",
                # Required outside development; targets are built in pytest's temp folders.
                "REPAIRBOT_REPOSITORY_ROOTS": json.dumps([str(tmp_path_factory.getbasetemp())]),
            }
        )
        env.update({f"REPAIRBOT_{key.upper()}": value for key, value in settings.items()})
        # The processes' temp dir: what one killed with SIGKILL leaves there (its spare import
        # checks' run folders) goes with pytest's temp folders, not into the machine's /tmp.
        env["TMPDIR"] = str(tmp_path / "temp")
        (tmp_path / "temp").mkdir(exist_ok=True)
        service = Service(env=env, data_dir=data_dir, port=free_port(), log_dir=log_dir)
        made.append(service)
        return service

    yield build
    for service in made:
        service.stop_all()


@pytest.fixture(scope="module")
def failing_target(tmp_path_factory):
    """The legacy workers as a git repository, and their real failing pytest output."""
    repo = tmp_path_factory.mktemp("target") / "repo"
    head = build_target(repo)
    before = run_tests(repo)
    assert before.returncode != 0, "the legacy target must fail before the fix"
    return repo, head, before.console


def wait_for(what: str, ready: Callable[[], Any], logs: Callable[[], str], timeout_s: float = 300):
    """What ``ready()`` returns once it is truthy; fails with ``what`` and ``logs()`` after
    ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = ready()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what}: not after {timeout_s} s\n{logs()}"
        time.sleep(0.3)
