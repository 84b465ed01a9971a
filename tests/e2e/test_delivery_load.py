"""1,000 GitHub deliveries over HTTP to a real `repairbot serve` (embedded worker): 10% are
redeliveries and 5% carry bad signatures. Exactly the valid unique ones are stored and each is
processed once; every forged one gets 401 and leaves no row."""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from bot.intake.webhook_auth import sign
from tests.conftest import CI_TOKEN, SECRET

pytestmark = pytest.mark.e2e
LOGS = Path(__file__).parents[1] / "fixtures" / "logs"


def test_thousand_deliveries_with_duplicates_and_forgeries(make_service):
    service = make_service()
    service.start_api()
    rng = random.Random(5)
    plan = []
    for index in range(1000):
        kind = rng.random()
        if kind < 0.05:
            plan.append(("forged", f"forged-{index}"))
        elif kind < 0.15 and index > 10:
            plan.append(("redelivery", f"d-{rng.randrange(index // 2)}"))
        else:
            plan.append(("valid", f"d-{index}"))

    def send(item: tuple[str, str]) -> tuple[str, str, int]:
        kind, delivery = item
        body = json.dumps(
            {
                "action": "created",
                "delivery": delivery,
                "comment": {"body": "looks good", "user": {"login": "dev", "type": "User"}},
                "issue": {"number": 1},
            }
        ).encode()
        signature = "sha256=" + "0" * 64 if kind == "forged" else sign(SECRET.encode(), body)
        with httpx.Client(base_url=service.url, timeout=30) as client:
            response = client.post(
                "/webhooks/github",
                content=body,
                headers={
                    "X-GitHub-Event": "issue_comment",
                    "X-GitHub-Delivery": delivery,
                    "X-Hub-Signature-256": signature,
                    "Content-Type": "application/json",
                },
            )
        return kind, delivery, response.status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(send, plan))
    forged = [r for r in results if r[0] == "forged"]
    assert forged and all(code == 401 for _, _, code in forged)
    accepted = {
        delivery for kind, delivery, code in results if kind != "forged" and code in (200, 202)
    }
    assert all(code in (200, 202) for kind, _, code in results if kind != "forged")
    expected = {delivery for kind, delivery in plan if kind != "forged"}
    assert accepted == expected

    engine = create_engine(f"sqlite:///{service.data_dir / 'repairbot.db'}")
    deadline = time.monotonic() + 300
    while True:
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT key, outcome FROM deliveries")).all()
        if all(outcome == "processed" for _, outcome in rows) or time.monotonic() > deadline:
            break
        time.sleep(1)
    engine.dispose()
    keys = [key for key, _ in rows]
    assert len(keys) == len(set(keys)) == len(expected)
    assert {key.removeprefix("github:") for key in keys} == expected
    assert all(outcome == "processed" for _, outcome in rows), service.logs()


def test_fifty_concurrent_console_logs_are_all_stored(make_service):
    """Different builds posted at once: each one stored (the shared hyperscan scratch lost most)."""
    service = make_service()
    service.start_api("--no-worker")
    log = (LOGS / "py311" / "combined.console.txt").read_bytes()

    def send(build: int) -> int:
        with httpx.Client(base_url=service.url, timeout=60) as client:
            response = client.post(
                f"/api/v1/ci-failures?pipeline=L0_MergeRequest_PR&build_number={build}"
                "&repository=/srv/repos/x&head_sha=abcdef1",
                content=log + b"\n" * build,
                headers={"Authorization": f"Bearer {CI_TOKEN}"},
            )
        return response.status_code

    with ThreadPoolExecutor(max_workers=50) as pool:
        codes = list(pool.map(send, range(1, 51)))
    assert codes == [202] * 50, service.logs()
    engine = create_engine(f"sqlite:///{service.data_dir / 'repairbot.db'}")
    with engine.connect() as connection:
        builds = connection.execute(text("SELECT build_number FROM reports")).scalars().all()
    engine.dispose()
    assert sorted(builds) == list(range(1, 51))


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_server_killed_mid_batch_loses_nothing_it_acknowledged(make_service, request, database):
    """kill -9 while 32 clients keep deliveries in flight: every delivery answered 202 is stored
    (group commit answers only after its batch's COMMIT); the unanswered may or may not be."""
    settings = {}
    if database == "postgresql":
        settings["database_url"] = request.getfixturevalue("postgres_url")
    service = make_service(**settings)
    service.start_api("--no-worker")
    run = f"kill9-{database}-{time.monotonic_ns()}"
    acknowledged: list[str] = []
    stop = threading.Event()

    def send_until_killed(client_index: int) -> None:
        body = json.dumps({"action": "opened", "issue": {"number": client_index}}).encode()
        headers = {
            "X-GitHub-Event": "issues",
            "X-Hub-Signature-256": sign(SECRET.encode(), body),
            "Content-Type": "application/json",
        }
        with httpx.Client(base_url=service.url, timeout=10) as client:
            for n in itertools.count():
                if stop.is_set():
                    return
                delivery = f"{run}-{client_index}-{n}"
                try:
                    response = client.post(
                        "/webhooks/github",
                        content=body,
                        headers={**headers, "X-GitHub-Delivery": delivery},
                    )
                except httpx.HTTPError:
                    return  # the server is gone: this delivery was never acknowledged
                if response.status_code == 202:
                    acknowledged.append(delivery)

    with ThreadPoolExecutor(max_workers=32) as pool:
        senders = [pool.submit(send_until_killed, index) for index in range(32)]
        deadline = time.monotonic() + 60
        while len(acknowledged) < 500 and time.monotonic() < deadline:
            time.sleep(0.05)
        service.kill("api")  # SIGKILL, mid-stream: some batch is being written
        stop.set()
        for sender in senders:
            sender.result()
    assert len(acknowledged) >= 500, service.logs()
    url = settings.get("database_url") or f"sqlite:///{service.data_dir / 'repairbot.db'}"
    engine = create_engine(url)
    with engine.connect() as connection:
        stored = connection.execute(
            text("SELECT key FROM deliveries WHERE key LIKE :run"), {"run": f"github:{run}-%"}
        ).scalars()
        keys = {key.removeprefix("github:") for key in stored}
    engine.dispose()
    assert set(acknowledged) <= keys
