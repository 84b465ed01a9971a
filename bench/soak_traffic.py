"""The soak's traffic (bench/soak.py): signed GitHub deliveries, CI failures, ``/bot run``.

All of it goes through HTTP to the API; a :class:`Tally` keeps what was sent and how long each
kind of request took, for the soak to hold against what the database stored.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy import Engine, create_engine, text

from bot.intake.webhook_auth import sign
from tests.fakes.github_api import FakeGitHub

SECRET = "soak-webhook-secret-0123456789"
CI_TOKEN = "soak-ci-token-0123456789"
Repos = list[tuple[str, str]]  # (full name on the GitHub double, head SHA)


@dataclass
class Tally:
    """What the traffic sent and how long each kind of request took."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    valid_deliveries: set[str] = field(default_factory=set)
    forged: int = 0
    forged_accepted: int = 0
    failures: set[tuple[str, int]] = field(default_factory=set)
    commands: int = 0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def took(self, kind: str, seconds: float) -> None:
        """Record one request of ``kind`` that took ``seconds``."""
        with self.lock:
            self.latencies.setdefault(kind, []).append(seconds)

    @contextmanager
    def timing(self, kind: str) -> Iterator[None]:
        """Record the block's time under ``kind``, unless it raises."""
        began = time.perf_counter()
        yield
        self.took(kind, time.perf_counter() - began)


def signed_post(
    client: httpx.Client,
    event: str,
    delivery: str,
    payload: dict[str, object],
    *,
    forge_signature: bool = False,
) -> httpx.Response:
    """POST a GitHub delivery, signed with the soak's secret (or with a forged signature)."""
    body = json.dumps(payload).encode()
    signature = "sha256=" + "0" * 64 if forge_signature else sign(SECRET.encode(), body)
    return client.post(
        "/webhooks/github",
        content=body,
        headers={
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery,
            "Content-Type": "application/json",
            "X-Hub-Signature-256": signature,
        },
    )


def idle_comment() -> dict[str, Any]:
    """An ``issue_comment`` payload that needs no action (the traffic's bulk)."""
    return {
        "action": "created",
        "issue": {"number": 1},
        "comment": {"body": "LGTM", "user": {"login": "dev", "type": "User"}},
        "sender": {"login": "dev", "type": "User"},
    }


@dataclass
class Sender:
    """The traffic between rounds: what it sent, and when the next failure and command are due."""

    client: httpx.Client
    github: FakeGitHub
    repos: Repos
    console: bytes
    tally: Tally
    engine: Engine
    rng: random.Random = field(default_factory=lambda: random.Random(1))
    sent: list[tuple[str, dict[str, object]]] = field(default_factory=list)
    build: int = 0
    next_failure: float = 0.0  # monotonic seconds; the first failure and command are due at once
    next_command: float = 0.0

    def step(self, now: float) -> None:
        """One round: a CI failure every ~5 s, a ``/bot run`` every ~90 s, one comment delivery."""
        if now >= self.next_failure:
            self.post_failure()
            self.next_failure = now + 5
        if now >= self.next_command:
            self.post_command()
            self.next_command = now + 90
        roll = self.rng.random()
        if roll < 0.05:
            self.post_forged()
        elif roll < 0.15 and self.sent:
            self.redeliver()
        else:
            self.post_comment()

    def post_failure(self) -> None:
        """The next build's CI failure, for the next repository in turn."""
        self.build += 1
        name, head = self.repos[self.build % len(self.repos)]
        params: dict[str, str | int] = {
            "pipeline": "L0_MergeRequest_PR",
            "build_number": self.build,
            "repository": name,
            "head_sha": head,
            "base_ref": "main",
        }
        headers = {"Authorization": f"Bearer {CI_TOKEN}"}
        with self.tally.timing("ci-failure"):
            answer = self.client.post(
                "/api/v1/ci-failures", content=self.console, params=params, headers=headers
            )
        answer.raise_for_status()
        self.tally.failures.add(("L0_MergeRequest_PR", self.build))

    def post_command(self) -> None:
        """``/bot run`` from the maintainer on a fix PR, once there is one."""
        with self.engine.connect() as connection:
            numbers = connection.execute(
                text("SELECT repository, pr_number FROM fixes WHERE pr_number IS NOT NULL")
            ).all()
        if not numbers:
            return
        repository, number = self.rng.choice(numbers)
        payload = self.github.comment_event(repository, number, "/bot run", login="maintainer")
        delivery = f"cmd-{uuid.uuid4()}"
        with self.tally.timing("bot-command"):
            answer = signed_post(self.client, "issue_comment", delivery, payload)
        if answer.status_code in (200, 202):
            self.tally.valid_deliveries.add(delivery)
            self.tally.commands += 1

    def post_forged(self) -> None:
        """A delivery with a forged signature (it must be refused with 401)."""
        answer = signed_post(
            self.client,
            "issue_comment",
            f"forged-{uuid.uuid4()}",
            {"action": "created"},
            forge_signature=True,
        )
        self.tally.forged += 1
        self.tally.forged_accepted += answer.status_code != 401

    def redeliver(self) -> None:
        """GitHub's redelivery of an earlier delivery (same id, same payload)."""
        delivery, payload = self.rng.choice(self.sent)
        with self.tally.timing("redelivery"):
            signed_post(self.client, "issue_comment", delivery, payload).raise_for_status()

    def post_comment(self) -> None:
        """A new comment that needs no action."""
        delivery = f"d-{uuid.uuid4()}"
        payload = idle_comment()
        with self.tally.timing("webhook"):
            answer = signed_post(self.client, "issue_comment", delivery, payload)
        answer.raise_for_status()
        self.tally.valid_deliveries.add(delivery)
        self.sent.append((delivery, payload))


def traffic(
    url: str,
    github: FakeGitHub,
    repos: Repos,
    console: bytes,
    tally: Tally,
    until: float,
    engine_url: str,
) -> None:
    """Mixed traffic until ``until``: failures every ~5 s, comments ~10/s, /bot run every ~90 s."""
    engine = create_engine(engine_url)
    with httpx.Client(base_url=url, timeout=60) as client:
        sender = Sender(client, github, repos, console, tally, engine)
        while time.monotonic() < until:
            try:
                sender.step(time.monotonic())
            except httpx.HTTPError as exc:
                tally.errors.append(f"{type(exc).__name__}: {exc}"[:200])
            time.sleep(0.1)
    engine.dispose()
