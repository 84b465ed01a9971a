"""The chaos soak's traffic (bench/chaos.py), sent over both API replicas as GitHub and a CI do.

Kinds of request, each recorded in a :class:`Ledger` when the service accepted it:
- CI failures of PR pipelines over many repositories and PRs: each repository has one root
  cause on its base branch, so there are far fewer fix PRs than failures (and each failing PR
  gets a notice);
- ``pull_request`` events for the open PRs, two at once for one head, one per replica (the
  pre-merge contract check's race);
- comments needing no action, 10% redeliveries of earlier ones, 5% forged signatures;
- ``/bot run`` from a maintainer on the fix PRs that stay open, and from a stranger;
- decisions, once each repository's fix PR exists: merged (fan-out to its PRs, then reverted on
  the base), or closed unmerged (both feed the suppression memory).

Like GitHub's redelivery and a CI's retry, a request that gets no answer or a 5xx is sent again
on the other replica (after ``Retry-After`` when given); one still refused after every try is
counted as refused, never as accepted.
"""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.soak_traffic import CI_TOKEN, SECRET, idle_comment
from bot.git import git
from bot.intake.webhook_auth import sign
from tests.fakes.github_api import BOT_LOGIN, FakeGitHub

ATTEMPTS = 8
MAINTAINER, STRANGER = "maintainer", "stranger"


@dataclass
class Target:
    """A repository on the GitHub double: its role in the run, its human PRs and base head."""

    name: str
    role: str  # "open" (gets /bot run), "merge" (merged, then reverted) or "close"
    prs: dict[int, str]  # PR number -> head SHA
    main: str


@dataclass(frozen=True)
class Command:
    """A ``/bot`` comment the service accepted."""

    repository: str
    number: int
    comment_id: int
    login: str


@dataclass
class Ledger:
    """What the traffic sent, what the service accepted, and how long each answer took."""

    started: float = field(default_factory=time.monotonic)
    latencies: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    deliveries: set[str] = field(default_factory=set)
    builds: dict[int, tuple[str, int | None]] = field(default_factory=dict)
    pr_events: set[tuple[str, int, str]] = field(default_factory=set)
    commands: list[Command] = field(default_factory=list)
    decisions: dict[str, str] = field(default_factory=dict)  # repository -> merged/closed/...
    refused: list[str] = field(default_factory=list)
    forged: int = 0
    forged_accepted: int = 0
    retries: int = 0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def took(self, kind: str, seconds: float) -> None:
        """Record one answered request of ``kind``."""
        with self.lock:
            self.latencies.setdefault(kind, []).append((time.monotonic(), seconds))

    def error(self, what: str) -> None:
        """Record a try that got no usable answer (it is tried again)."""
        with self.lock:
            self.retries += 1
            self.errors.append(what[:200])


class Replicas:
    """Clients of every API replica; each request goes to the next one in turn, and fails over."""

    def __init__(self, urls: list[str], ledger: Ledger) -> None:
        self.clients = [httpx.Client(base_url=url, timeout=30) for url in urls]
        self.ledger = ledger
        self._turn = itertools.count()
        self._lock = threading.Lock()

    def post(self, kind: str, path: str, **request: Any) -> httpx.Response | None:
        """POST until a replica answers below 500; None when every try failed."""
        for attempt in range(ATTEMPTS):
            with self._lock:
                client = self.clients[next(self._turn) % len(self.clients)]
            began = time.perf_counter()
            try:
                answer = client.post(path, **request)
            except httpx.HTTPError as exc:
                self.ledger.error(f"{kind}: {type(exc).__name__}: {exc}")
                time.sleep(min(0.25 * 2**attempt, 4))
                continue
            if answer.status_code >= 500:
                self.ledger.error(f"{kind}: {answer.status_code} {answer.text[:100]}")
                time.sleep(_retry_after(answer, attempt))
                continue
            self.ledger.took(kind, time.perf_counter() - began)
            return answer
        return None

    def close(self) -> None:
        """Close every client."""
        for client in self.clients:
            client.close()


def _retry_after(answer: httpx.Response, attempt: int) -> float:
    said = answer.headers.get("retry-after", "")
    return min(float(said), 10.0) if said.isdigit() else min(0.25 * 2**attempt, 4)


def delivery_request(
    event: str, delivery: str, payload: object, *, forged: bool = False
) -> dict[str, Any]:
    """The keyword arguments of a signed GitHub delivery's POST (or a forged one's)."""
    body = json.dumps(payload).encode()
    signature = "sha256=" + "0" * 64 if forged else sign(SECRET.encode(), body)
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "Content-Type": "application/json",
        "X-Hub-Signature-256": signature,
    }
    return {"content": body, "headers": headers}


@dataclass
class Sender:
    """The traffic's state between ticks."""

    replicas: Replicas
    github: FakeGitHub
    targets: list[Target]
    console: bytes
    ledger: Ledger
    workdir: Path
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    sent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    build: int = 0
    due: dict[str, float] = field(default_factory=dict)
    pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(2))

    def tick(self, now: float) -> None:
        """One round of traffic: what is due, then one comment delivery."""
        for kind, every in (("failure", 2.0), ("check", 4.0), ("command", 20.0)):
            if now >= self.due.get(kind, 0.0):
                getattr(self, f"send_{kind}")()
                self.due[kind] = now + every
        roll = self.rng.random()
        if roll < 0.05:
            self.send_forged()
        elif roll < 0.15 and self.sent:
            self.redeliver()
        else:
            self.send_comment()

    def _pairs(self) -> list[tuple[Target, int, str]]:
        return [(t, number, head) for t in self.targets for number, head in t.prs.items()]

    def send_failure(self) -> None:
        """The next PR pipeline's failure: every PR once in turn first, then at random."""
        pairs = self._pairs()
        self.build += 1
        target, number, head = (
            pairs[self.build - 1] if self.build <= len(pairs) else self.rng.choice(pairs)
        )
        self.post_failure(target.name, head, number)

    def post_failure(self, repository: str, head: str, number: int | None) -> None:
        """A failed ``L0_MergeRequest_PR`` build of ``head`` (of PR ``number``), as Jenkins
        posts it."""
        params: dict[str, str | int] = {
            "pipeline": "L0_MergeRequest_PR",
            "build_number": self.build,
            "repository": repository,
            "head_sha": head,
            "base_ref": "main",
            "stage": "H100_PCIe-PyTorch-1",
            **({"pr_number": number} if number is not None else {}),
        }
        headers = {"Authorization": f"Bearer {CI_TOKEN}"}
        answer = self.replicas.post(
            "ci-failure", "/api/v1/ci-failures", content=self.console, params=params,
            headers=headers,
        )  # fmt: skip
        if answer is not None and answer.status_code in (200, 201, 202):
            self.ledger.builds[self.build] = (repository, number)
        else:
            self.ledger.refused.append(f"ci-failure {self.build}")

    def send_check(self) -> None:
        """One PR's ``pull_request`` event, twice at once (two deliveries, one per replica)."""
        target, number, head = self.rng.choice(self._pairs())
        payload = self.github.pull_request_event(target.name, number, "synchronize")
        ids = [f"pr-{uuid.uuid4()}" for _ in range(2)]
        answers = list(self.pool.map(lambda d: self.deliver("pull_request", d, payload), ids))
        if any(answers):
            self.ledger.pr_events.add((target.name, number, head))

    def send_command(self) -> None:
        """``/bot run`` on an open fix PR: from the maintainer, every third from a stranger."""
        fixes = [(t.name, n) for t in self.targets if t.role == "open" for n in fix_prs(self, t)]
        if not fixes:
            return
        repository, number = self.rng.choice(fixes)
        login = STRANGER if self.rng.random() < 1 / 3 else MAINTAINER
        payload = self.github.comment_event(repository, number, "/bot run", login=login)
        if self.deliver("issue_comment", f"cmd-{uuid.uuid4()}", payload, kind="bot-command"):
            comment_id = int(payload["comment"]["id"])
            self.ledger.commands.append(Command(repository, number, comment_id, login))

    def deliver(
        self, event: str, delivery: str, payload: dict[str, Any], *, kind: str = "webhook"
    ) -> bool:
        """Deliver until accepted; whether it was."""
        answer = self.replicas.post(
            kind, "/webhooks/github", **delivery_request(event, delivery, payload)
        )
        if answer is not None and answer.status_code in (200, 202):
            with self.ledger.lock:
                self.ledger.deliveries.add(delivery)
            return True
        self.ledger.refused.append(f"{event} {delivery}")
        return False

    def send_forged(self) -> None:
        """A delivery with a forged signature: it must be refused (401)."""
        request = delivery_request("issue_comment", f"forged-{uuid.uuid4()}", {}, forged=True)
        answer = self.replicas.post("forged", "/webhooks/github", **request)
        self.ledger.forged += 1
        self.ledger.forged_accepted += answer is not None and answer.status_code != 401

    def redeliver(self) -> None:
        """GitHub's redelivery of an earlier delivery (same id, same payload)."""
        delivery, payload = self.rng.choice(self.sent)
        self.deliver("issue_comment", delivery, payload, kind="redelivery")

    def send_comment(self) -> None:
        """A new comment that needs no action."""
        delivery = f"d-{uuid.uuid4()}"
        payload = idle_comment()
        if self.deliver("issue_comment", delivery, payload):
            self.sent.append((delivery, payload))

    def decide(self) -> None:
        """Merge or close each decided repository's fix PR once it exists (once each)."""
        for target in self.targets:
            if target.role == "open" or target.name in self.ledger.decisions:
                continue
            numbers = fix_prs(self, target)
            if not numbers:
                continue
            number = numbers[0]
            if target.role == "merge":
                self.github.merge_pull(target.name, number, login=MAINTAINER)
            else:
                with self.github.lock:
                    pull = self.github.repos[target.name].pulls[number]
                    pull["state"], pull["closed_at"] = "closed", pull["updated_at"]
            payload = self.github.pull_request_event(target.name, number, "closed")
            payload["sender"]["login"] = MAINTAINER
            self.deliver("pull_request", f"decide-{uuid.uuid4()}", payload)
            self.ledger.decisions[target.name] = "merged" if target.role == "merge" else "closed"

    def revert(self) -> None:
        """Revert each merged fix on its base branch, then send a failure of the reverted head
        (the suppression memory must hold it: no new PR)."""
        for target in self.targets:
            if self.ledger.decisions.get(target.name) != "merged":
                continue
            checkout = self.workdir / f"revert-{target.name.replace('/', '-')}"
            bare = self.github.repos[target.name].path
            subprocess.run(["git", "clone", "--quiet", str(bare), str(checkout)], check=True)
            git(checkout, "-c", "user.name=dev", "-c", "user.email=dev@example.com", "revert",
                "--no-edit", "HEAD")  # fmt: skip
            git(checkout, "push", "--quiet", "origin", "HEAD:refs/heads/main")
            reverted = git(checkout, "rev-parse", "HEAD").strip()
            self.ledger.decisions[target.name] = "reverted"
            self.build += 1
            self.post_failure(target.name, reverted, None)


def fix_prs(sender: Sender, target: Target) -> list[int]:
    """The numbers of the bot's PRs on ``target``."""
    return [
        int(p["number"])
        for p in sender.github.pulls(target.name)
        if p["user"]["login"] == BOT_LOGIN
    ]


@contextmanager
def sending(urls: list[str], ledger: Ledger) -> Iterator[Replicas]:
    """Clients of the replicas for the block."""
    replicas = Replicas(urls, ledger)
    try:
        yield replicas
    finally:
        replicas.close()


def traffic(sender: Sender, until: float, decide_at: float, revert_at: float) -> None:
    """Ticks until ``until``; decisions once past ``decide_at``, reverts once past
    ``revert_at``."""
    reverted = False
    while time.monotonic() < until:
        now = time.monotonic()
        try:
            sender.tick(now)
            if now >= decide_at:
                sender.decide()
            if now >= revert_at and not reverted:
                sender.revert()
                reverted = True
        except (httpx.HTTPError, subprocess.CalledProcessError, KeyError) as exc:
            sender.ledger.errors.append(f"traffic: {type(exc).__name__}: {exc}"[:200])
        time.sleep(0.1)
    sender.pool.shutdown()
