"""Buildkite's REST API as the client sees it from the double: rate limits waited out as asked,
server errors retried with backoff, and what cannot be retried refused with the reason."""

from __future__ import annotations

import re
import socket

import pytest
from pydantic import SecretStr

from bot.forges.buildkite.rest import (
    BuildkiteGone,
    BuildkiteNotConfigured,
    BuildkiteRefused,
    BuildkiteUnavailable,
    call_json,
    wait_for,
)
from tests.fakes.buildkite.builds import FakeBuild, FakeJob
from tests.fakes.buildkite.server import TOKEN

BUILD_PATH = "/v2/organizations/acme/pipelines/trt-gpu/builds/5"


@pytest.fixture
def api_settings(tmp_path, buildkite_api):
    from tests.conftest import make_settings

    buildkite_api.add_build(
        FakeBuild("acme", "trt-gpu", 5, "git@github.com:acme/trt.git", jobs=[FakeJob("pytest")])
    )
    return make_settings(
        tmp_path / "data",
        buildkite_api_url=buildkite_api.url,
        buildkite_api_token=SecretStr(TOKEN),
        buildkite_retry_backoff_s=0.5,
    )


@pytest.mark.parametrize(
    ("status", "headers", "attempt", "wait"),
    [
        (429, {"ratelimit-reset": "42", "ratelimit-user-reset": "7"}, 0, 42.0),
        (429, {"ratelimit-user-reset": "7"}, 0, 7.0),
        (429, {"retry-after": "3"}, 0, 3.0),
        (429, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 2, 4.0),  # a date: the backoff
        (429, {}, 3, 8.0),
        (429, {"ratelimit-reset": "-5"}, 0, 0.0),
        (502, {}, 2, 4.0),
        (503, {"retry-after": "30"}, 0, 1.0),
        (404, {}, 0, None),
        (401, {"ratelimit-reset": "5"}, 0, None),
    ],
)
def test_waits_are_the_ones_buildkite_asks_for(status, headers, attempt, wait):
    assert wait_for(status, headers, attempt=attempt, backoff_s=1.0) == wait


def test_a_5xx_is_not_retried_for_a_request_that_is_not_safe_to_repeat():
    assert wait_for(502, {}, attempt=0, backoff_s=1.0, idempotent=False) is None
    assert wait_for(429, {}, attempt=0, backoff_s=1.0, idempotent=False) == 1.0


def test_a_429_is_waited_out_then_the_request_succeeds(api_settings, buildkite_api):
    headers = {"RateLimit-Remaining": "0", "RateLimit-Reset": "2", "RateLimit-User-Reset": "9"}
    buildkite_api.fault("GET", BUILD_PATH + "$", 429, times=2, headers=headers)
    slept: list[float] = []
    build = call_json(api_settings, "GET", BUILD_PATH, sleep=slept.append)
    assert build["number"] == 5 and slept == [9.0, 9.0]
    assert [c.status for c in buildkite_api.calls_to("GET", BUILD_PATH)] == [429, 429, 200]


def test_server_errors_are_retried_with_a_doubling_backoff_then_left_for_later(
    api_settings, buildkite_api
):
    buildkite_api.fault("GET", BUILD_PATH + "$", 502, times=5)
    slept: list[float] = []
    with pytest.raises(BuildkiteUnavailable, match=r"answered 502 \(attempt 5 of 5"):
        call_json(api_settings, "GET", BUILD_PATH, sleep=slept.append)
    assert slept == [0.5, 1.0, 2.0, 4.0]
    assert len(buildkite_api.calls_to("GET", BUILD_PATH)) == 5


def test_a_wait_longer_than_a_worker_waits_is_left_for_a_later_retry(api_settings, buildkite_api):
    buildkite_api.fault("GET", BUILD_PATH + "$", 429, headers={"RateLimit-Reset": "3600"})
    slept: list[float] = []
    with pytest.raises(BuildkiteUnavailable, match="next wait 3600s"):
        call_json(api_settings, "GET", BUILD_PATH, sleep=slept.append)
    assert slept == [] and len(buildkite_api.calls) == 1


def test_a_rebuild_answered_502_is_not_sent_twice(api_settings, buildkite_api):
    buildkite_api.fault("PUT", "/rebuild$", 502)
    with pytest.raises(BuildkiteRefused, match="answered 502"):
        call_json(api_settings, "PUT", BUILD_PATH + "/rebuild", sleep=lambda _: None)
    assert len(buildkite_api.calls_to("PUT", "/rebuild$")) == 1


def test_answers_that_cannot_be_used_are_refused_with_the_reason(api_settings, buildkite_api):
    with pytest.raises(BuildkiteGone, match="404"):
        call_json(api_settings, "GET", BUILD_PATH.replace("/5", "/6"))
    forged = api_settings.model_copy(update={"buildkite_api_token": SecretStr("bkua_forged")})
    with pytest.raises(BuildkiteRefused, match="answered 401"):
        call_json(forged, "GET", BUILD_PATH)
    with pytest.raises(BuildkiteNotConfigured, match="REPAIRBOT_BUILDKITE_API_TOKEN"):
        call_json(api_settings.model_copy(update={"buildkite_api_token": None}), "GET", BUILD_PATH)


def test_no_answer_at_all_is_retried_then_left_for_later(api_settings):
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    down = api_settings.model_copy(update={"buildkite_api_url": f"http://127.0.0.1:{port}"})
    slept: list[float] = []
    with pytest.raises(BuildkiteUnavailable, match="no answer"):
        call_json(down, "GET", BUILD_PATH, sleep=slept.append)
    assert len(slept) == 4
    with pytest.raises(BuildkiteRefused, match="not sent"):
        call_json(down, "PUT", BUILD_PATH + "/rebuild", sleep=slept.append)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"<html>maintenance</html>", "not a JSON object (Invalid JSON"),
        (b"[1, 2]", "not a JSON object (Input should be an object)"),
        (b"[" * 50_000 + b"]" * 50_000, "recursion limit exceeded"),
    ],
)
def test_an_answer_that_is_not_a_json_object_is_refused(api_settings, buildkite_api, body, why):
    buildkite_api.fault("GET", BUILD_PATH + "$", 200, body=body)
    with pytest.raises(BuildkiteRefused, match=re.escape(why)):
        call_json(api_settings, "GET", BUILD_PATH)
