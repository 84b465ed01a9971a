"""Slow clients against a real `repairbot serve` (issue 17, row 15): unauthenticated clients that
send part of a body and then stall, or dribble it a byte at a time, are answered 408 and cut off
once the read deadline passes, clients that dribble their headers are disconnected, and the
service keeps answering everyone else meanwhile."""

from __future__ import annotations

import socket
import threading

import pytest

from bot.intake.webhook_auth import sign
from tests.conftest import SECRET

pytestmark = pytest.mark.e2e
READ_TIMEOUT_S = 2
# Generous: the outcome is asserted, not the speed; before the deadline existed these
# connections were held for as long as the client liked (>= 30 s observed).
CUT_OFF_WITHIN_S = 25
STALLED = 40
FORGED = "sha256=" + "0" * 64


def _partial_post(port: int, path: str) -> socket.socket:
    """Headers announcing 10,000 bytes, then 10 of them, then nothing."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=CUT_OFF_WITHIN_S)
    conn.sendall(
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "X-GitHub-Event: ping\r\nX-GitHub-Delivery: slow\r\nContent-Length: 10000\r\n"
        # Signed (wrongly): only a body with a signature to check is read before its sender is
        # authenticated, so only such a body can be dribbled.
        f"X-Hub-Signature-256: {FORGED}\r\nX-Repairbot-Signature-256: {FORGED}\r\n\r\n"
        '{"zen": "z'.encode()
    )
    return conn


def _answer_then_close(conn: socket.socket) -> tuple[bytes, bool]:
    """Everything the server sends, and whether it then closed the connection (EOF)."""
    received = b""
    try:
        while chunk := conn.recv(65536):
            received += chunk
    except TimeoutError:
        return received, False
    except ConnectionResetError:
        # A client still sending when the server closes gets a reset, which may discard the
        # 408 it had already received: cut off all the same.
        return received, True
    return received, True


def test_stalled_bodies_are_cut_off_while_others_are_served(make_service):
    service = make_service(
        read_timeout_s=str(READ_TIMEOUT_S),
        embedded_worker="false",
        ci_hmac_secret="ci-hmac-secret-0123456789",
    )
    service.start_api()
    paths = ["/webhooks/github", "/api/v1/ci-failures"]
    stalled = [_partial_post(service.port, paths[i % 2]) for i in range(STALLED)]
    try:
        body = b'{"zen": "still here"}'
        with service.client() as client:  # a normal delivery while 40 connections stall
            response = client.post(
                "/webhooks/github",
                content=body,
                headers={
                    "X-GitHub-Event": "ping",
                    "X-GitHub-Delivery": "normal",
                    "Content-Type": "application/json",
                    "X-Hub-Signature-256": sign(SECRET.encode(), body),
                },
            )
            assert response.status_code == 200 and response.json()["zen"] == "still here"
        outcomes = [_answer_then_close(conn) for conn in stalled]
    finally:
        for conn in stalled:
            conn.close()
    for received, closed in outcomes:
        assert received.startswith(b"HTTP/1.1 408"), received[:200]
        assert b"request body not received within 2 s" in received
        assert closed, "the server kept the connection open after its 408"
    with service.client() as client:
        assert client.get("/healthz").status_code == 200


def test_a_body_dribbled_a_byte_at_a_time_is_cut_off_too(make_service):
    service = make_service(
        read_timeout_s=str(READ_TIMEOUT_S),
        embedded_worker="false",
        ci_hmac_secret="ci-hmac-secret-0123456789",
    )
    service.start_api()
    conn = _partial_post(service.port, "/webhooks/github")
    sent = threading.Event()
    stop = threading.Event()

    def dribble() -> None:
        # One byte every 0.2 s would take over half an hour for the announced length.
        while not stop.wait(0.2):
            try:
                conn.sendall(b" ")
            except OSError:
                return  # the server closed the connection: what this test wants
            sent.set()

    sender = threading.Thread(target=dribble, daemon=True)
    sender.start()
    try:
        received, closed = _answer_then_close(conn)
    finally:
        stop.set()
        sender.join(timeout=5)
        conn.close()
    assert sent.is_set()
    # Within the socket timeout (CUT_OFF_WITHIN_S), else ``closed`` is False.
    assert closed
    assert received == b"" or received.startswith(b"HTTP/1.1 408"), received[:200]


def _dribble(conn: socket.socket, data: bytes, stop: threading.Event) -> threading.Thread:
    """Send ``data`` one byte every 0.2 s in a thread until it is sent, stopped or cut off."""

    def run() -> None:
        for byte in data:
            if stop.wait(0.2):
                return
            try:
                conn.sendall(bytes([byte]))
            except OSError:
                return

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("keep_alive", [False, True], ids=["first-request", "keep-alive"])
def test_headers_dribbled_a_byte_at_a_time_are_cut_off(make_service, keep_alive):
    service = make_service(
        read_timeout_s=str(READ_TIMEOUT_S),
        embedded_worker="false",
        ci_hmac_secret="ci-hmac-secret-0123456789",
    )
    service.start_api()
    conn = socket.create_connection(("127.0.0.1", service.port), timeout=CUT_OFF_WITHIN_S)
    if keep_alive:  # one complete request first; the deadline then applies to the next one
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert conn.recv(65536).startswith(b"HTTP/1.1 200")
    headers = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"y" * 400 + b"\r\n\r\n"
    stop = threading.Event()
    sender = _dribble(conn, headers, stop)  # 80 s at this pace
    try:
        with service.client() as client:
            assert client.get("/healthz").status_code == 200  # others are served meanwhile
        received, closed = _answer_then_close(conn)
    finally:
        stop.set()
        sender.join(timeout=5)
        conn.close()
    assert closed and b"200" not in received, received[:200]
