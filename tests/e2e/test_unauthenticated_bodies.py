"""Unauthenticated bodies against a real `repairbot serve` (issue 36, item 3): 24 concurrent
60 MiB chunked CI posts with a wrong or missing token, and webhooks without a signature, are all
answered 401 at once without their bodies being read, and the API's memory stays flat.

Before the fix the service read every body whole before looking at the credentials: the same
burst took it from 141 MiB to about 1.07 GB resident.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from bot.intake.webhook_auth import sign
from tests.conftest import CI_TOKEN, SECRET

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MIB = 1024 * 1024
BODY_BYTES = 60 * MIB
CHUNK = b"[build] compiling kernel 12345\n" * (256 * 1024 // 31)  # about 256 KiB of console text
CI_POSTS = 24
WEBHOOK_POSTS = 8
CI_CREDENTIALS: list[dict[str, str]] = [
    {},
    {"Authorization": "Bearer wrong-token-0123456789"},
    {"Authorization": CI_TOKEN},  # the right token without "Bearer "
]
# What the burst may cost the API: each of the 32 connections buffers at most uvicorn's
# high-water mark (64 KiB) before its route answers, about 2 MiB in all, plus the interpreter's
# own noise (32 request cycles and their HTTPExceptions); measured: 1-2 MiB. 60 MiB is less than
# one of the bodies: growing by that much would mean at least one was read whole (before the
# fix the peak grew by 1.5 GiB: every body was read).
MAX_GROWTH_MIB = 60
# Answered as soon as the headers are in; generous for a loaded 2-core machine. Reading a
# 60 MiB body first took seconds per request under this burst.
ANSWERED_WITHIN_S = 5.0


@dataclass
class Outcome:
    status: int
    seconds: float
    streamed: int  # bytes the client had produced when the answer came (kernel buffers included)
    connection: str | None


def _server_pid(pid: int) -> int:
    """The process that serves: ``pid`` itself, or the last of its descendants running
    ``serve`` when ``pid`` is a launcher."""
    found = pid
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        if b"serve" in cmdline:
            found = _server_pid(int(child))
    return found


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _post(url: str, headers: dict[str, str], start: threading.Barrier) -> Outcome:
    streamed = 0

    def body():  # chunked: no Content-Length to refuse it by
        nonlocal streamed
        while streamed < BODY_BYTES:
            streamed += len(CHUNK)
            yield CHUNK

    with httpx.Client(timeout=60) as client:
        start.wait()
        began = time.monotonic()
        # httpx reads the answer even when the server closed the connection mid-body.
        response = client.post(url, content=body(), headers=headers)
        seconds = time.monotonic() - began
    return Outcome(response.status_code, seconds, streamed, response.headers.get("connection"))


def _probe_health(url: str, done: threading.Event) -> list[float]:
    """``/healthz`` latencies (ms) until ``done``, at least one: the service keeps answering."""
    latencies: list[float] = []
    with httpx.Client(base_url=url, timeout=30) as client:
        while not done.is_set() or not latencies:
            began = time.monotonic()
            assert client.get("/healthz").status_code == 200
            latencies.append((time.monotonic() - began) * 1000)
            time.sleep(0.01)
    return latencies


def _warm_up(service) -> None:
    """One of each request the service answers, so the baseline has their code paths loaded."""
    with service.client() as client:
        ping = b'{"zen": "warm"}'
        headers = {"X-GitHub-Event": "ping", "X-GitHub-Delivery": "warm"}
        headers["X-Hub-Signature-256"] = sign(SECRET.encode(), ping)
        assert client.post("/webhooks/github", content=ping, headers=headers).status_code == 200
        auth = {"Authorization": f"Bearer {CI_TOKEN}"}
        report = client.post("/api/v1/ci-failures?pipeline=warm", content=CHUNK, headers=auth)
        assert report.status_code == 202, report.text
        assert client.post("/api/v1/ci-failures", content=CHUNK).status_code == 401


def test_unauthenticated_bodies_are_refused_unread(make_service):
    service = make_service(embedded_worker="false")
    service.start_api()
    pid = _server_pid(service.processes["api"].pid)
    _warm_up(service)
    before_kib = _status_kib(pid, "VmRSS")
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM from now on: the burst's peak
    targets = [
        (f"{service.url}/api/v1/ci-failures", CI_CREDENTIALS[i % len(CI_CREDENTIALS)])
        for i in range(CI_POSTS)
    ] + [
        (f"{service.url}/webhooks/github", {"X-GitHub-Event": "issues", "X-GitHub-Delivery": "x"})
    ] * WEBHOOK_POSTS
    start = threading.Barrier(len(targets))
    done = threading.Event()
    with ThreadPoolExecutor(len(targets) + 1) as pool:
        probes = pool.submit(_probe_health, service.url, done)
        outcomes = list(pool.map(lambda t: _post(t[0], t[1], start), targets))
        done.set()
        health_ms = sorted(probes.result())
    peak_kib = _status_kib(pid, "VmHWM")
    growth_mib = (peak_kib - before_kib) / 1024
    print(
        f"API RSS before {before_kib / 1024:.1f} MiB, peak during the burst "
        f"{peak_kib / 1024:.1f} MiB (+{growth_mib:.1f} MiB); slowest answer "
        f"{max(o.seconds for o in outcomes):.2f} s; most streamed by one client "
        f"{max(o.streamed for o in outcomes) / MIB:.1f} MiB of {BODY_BYTES / MIB:.0f}"
        f" (server pid {pid}, launcher pid {service.processes['api'].pid}, {os.cpu_count()} CPUs);"
        f" /healthz meanwhile: {len(health_ms)} probes, max {health_ms[-1]:.1f} ms"
    )
    assert [o.status for o in outcomes] == [401] * len(targets), service.logs()
    assert all(o.connection == "close" for o in outcomes)
    assert max(o.seconds for o in outcomes) < ANSWERED_WITHIN_S
    assert growth_mib < MAX_GROWTH_MIB


def _paused_post(url: str, index: int, start: threading.Barrier, pause_s: float) -> Outcome:
    """An authenticated 8 MiB report sent in two halves ``pause_s`` apart."""
    half = CHUNK * (4 * MIB // len(CHUNK))
    streamed = 0

    def body():
        nonlocal streamed
        for number, part in enumerate((half, half)):
            if number:
                time.sleep(pause_s)  # every request holds its first half meanwhile
            streamed += len(part)
            yield part

    headers = {"Authorization": f"Bearer {CI_TOKEN}", "Idempotency-Key": f"paused-{index}"}
    with httpx.Client(timeout=60) as client:
        start.wait()
        began = time.monotonic()
        response = client.post(url, content=body(), headers=headers)
    outcome = Outcome(
        response.status_code, time.monotonic() - began, streamed, response.headers.get("connection")
    )
    assert response.status_code != 503 or response.headers["retry-after"] == "1"
    return outcome


def test_bodies_past_the_buffer_cap_are_503_and_the_cap_frees_up(make_service):
    # Two 8 MiB reports fit at once; six are sent at once, each pausing halfway (6 x 4 MiB held).
    service = make_service(
        embedded_worker="false",
        max_report_bytes=str(8 * MIB),
        max_webhook_bytes=str(8 * MIB),
        max_buffered_body_bytes=str(16 * MIB),
    )
    service.start_api()
    url = f"{service.url}/api/v1/ci-failures"
    start = threading.Barrier(6)
    with ThreadPoolExecutor(6) as pool:
        outcomes = list(pool.map(lambda i: _paused_post(url, i, start, 1.0), range(6)))
    statuses = sorted(o.status for o in outcomes)
    print(f"six 8 MiB reports at once against a 16 MiB buffer cap: {statuses}")
    assert set(statuses) <= {202, 503} and 503 in statuses, (statuses, service.logs())
    assert all(o.connection == "close" for o in outcomes if o.status == 503)
    # One at a time, every refused report now fits: what the refused and finished reads had
    # taken was given back.
    lone = threading.Barrier(1)
    for index, outcome in enumerate(outcomes):
        if outcome.status == 503:
            assert _paused_post(url, index, lone, 0).status == 202
