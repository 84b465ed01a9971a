"""``bot.api.body``: the budget on bodies being read at once, all requests together (issue 36,
item 3), through the real app and database (SQLite and PostgreSQL): a body that would pass it
is 503 with ``Retry-After``, and every read gives back what it took, however it ends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from bot.api.body import BodyBudget
from bot.app import create_app
from bot.intake.webhook_auth import sign
from tests.conftest import CI_TOKEN, SECRET, make_settings

CONSOLE = (
    Path(__file__).parents[2] / "fixtures" / "logs" / "py311" / "combined.console.txt"
).read_bytes()
AUTH = {"Authorization": f"Bearer {CI_TOKEN}"}
HALF = len(CONSOLE) // 2


def test_the_budget_takes_up_to_its_cap_and_nothing_past_it():
    budget = BodyBudget(100)
    assert budget.charge(60) and budget.charge(40) and budget.held == 100
    assert not budget.charge(1) and budget.held == 100  # refused: nothing taken
    budget.release(40)
    assert budget.charge(30) and budget.held == 90
    budget.release(90)
    assert budget.held == 0


def _small(settings, **overrides: object):
    """``settings``' database with caps a test can reach: one console log per body, one and a
    quarter of them buffered at once."""
    values: dict[str, object] = {
        "database_url": settings.database_url,
        "max_report_bytes": len(CONSOLE),
        "max_webhook_bytes": len(CONSOLE),
        "max_buffered_body_bytes": len(CONSOLE) + len(CONSOLE) // 4,
        **overrides,
    }
    return make_settings(settings.data_dir, **values)


def _client(app) -> httpx.AsyncClient:
    # The ASGI transport hands the app one chunk per ``receive()``, when the app asks for it.
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def test_a_body_past_the_budget_is_503_and_the_budget_is_given_back(settings):
    app = create_app(_small(settings))
    budget: BodyBudget = app.state.body_budget

    async def scenario() -> tuple[httpx.Response, httpx.Response, httpx.Response]:
        first_half_read, go_on = asyncio.Event(), asyncio.Event()

        async def held_body() -> AsyncIterator[bytes]:
            yield CONSOLE[:HALF]
            first_half_read.set()  # the app asks for more: it has charged the first half
            await go_on.wait()
            yield CONSOLE[HALF:]

        async with _client(app) as client:
            held = asyncio.create_task(
                client.post("/api/v1/ci-failures", content=held_body(), headers=AUTH)
            )
            await first_half_read.wait()
            assert budget.held == HALF
            # Half a log held + a whole one > one and a quarter: refused, the held half kept.
            refused = await client.post(
                "/api/v1/ci-failures", content=_chunks(CONSOLE), headers=AUTH
            )
            assert budget.held == HALF
            go_on.set()
            first = await held
            assert budget.held == 0
            again = await client.post("/api/v1/ci-failures", content=_chunks(CONSOLE), headers=AUTH)
            return refused, first, again

    refused, first, again = asyncio.run(scenario())
    assert refused.status_code == 503, refused.text
    assert refused.headers["retry-after"] == "1" and refused.headers["connection"] == "close"
    assert "retry" in refused.json()["detail"]
    assert first.status_code == 202 and again.status_code == 202, again.text
    assert budget.held == 0


def test_a_webhook_past_the_budget_is_503_too(settings):
    app = create_app(_small(settings))
    body = b'{"zen": "' + b"z" * (len(CONSOLE) - 20) + b'"}'
    headers = {
        "X-GitHub-Event": "ping",
        "X-GitHub-Delivery": "budget-1",
        "Content-Type": "application/json",
        "X-Hub-Signature-256": sign(SECRET.encode(), body),
    }

    async def scenario() -> tuple[httpx.Response, httpx.Response]:
        app.state.body_budget.charge(HALF)  # as if another request were half read
        async with _client(app) as client:
            refused = await client.post("/webhooks/github", content=_chunks(body), headers=headers)
            app.state.body_budget.release(HALF)
            accepted = await client.post("/webhooks/github", content=body, headers=headers)
        return refused, accepted

    refused, accepted = asyncio.run(scenario())
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert accepted.status_code == 200 and accepted.json()["status"] == "pong"
    assert app.state.body_budget.held == 0


async def _stalled() -> AsyncIterator[bytes]:
    yield CONSOLE[:100]
    await asyncio.sleep(5)  # past the read deadline below
    yield CONSOLE[100:]


@pytest.mark.parametrize(
    ("body", "headers", "code"),
    [
        # Over the request's own cap, found mid-stream (no Content-Length to refuse up front).
        (lambda: _chunks(CONSOLE, b"x"), AUTH, 413),
        (_stalled, AUTH, 408),
        # Read whole, then refused: an HMAC that does not match the body.
        (lambda: _chunks(CONSOLE), {"X-Repairbot-Signature-256": "sha256=" + "0" * 64}, 401),
        # Read whole, then refused by the screening.
        (lambda: _chunks(b"\x00binary"), AUTH, 422),
        (lambda: _chunks(CONSOLE[:HALF], CONSOLE[HALF:]), AUTH, 202),
    ],
    ids=["413", "408", "401-after-reading", "422", "202"],
)
def test_every_read_gives_back_what_it_took(settings, body, headers, code):
    app = create_app(
        _small(settings, read_timeout_s=0.3, ci_hmac_secret="ci-hmac-secret-0123456789")
    )

    async def post() -> httpx.Response:
        async with _client(app) as client:
            return await client.post("/api/v1/ci-failures", content=body(), headers=headers)

    response = asyncio.run(post())
    assert response.status_code == code, response.text
    assert app.state.body_budget.held == 0


def test_the_buffer_cap_is_at_least_the_largest_body(tmp_path):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="REPAIRBOT_MAX_BUFFERED_BODY_BYTES"):
        make_settings(tmp_path, max_report_bytes=100, max_buffered_body_bytes=99)
    with pytest.raises(ValidationError, match="REPAIRBOT_MAX_BUFFERED_BODY_BYTES"):
        make_settings(tmp_path, max_webhook_bytes=100, max_buffered_body_bytes=99)
    defaults = make_settings(tmp_path)
    assert defaults.max_buffered_body_bytes == 192 * 1024 * 1024
    assert defaults.max_buffered_body_bytes >= 3 * defaults.max_report_bytes  # three at once
