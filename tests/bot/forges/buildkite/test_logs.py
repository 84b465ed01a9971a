"""Job logs from the Buildkite double: whole when they fit, head and tail of a 2 GiB log in
bounded memory (with and without ranges), gone logs, NUL bytes and invalid UTF-8."""

from __future__ import annotations

import re
import tracemalloc
from io import BytesIO
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.forges.buildkite.events import finished_job
from bot.forges.buildkite.logs import download_job_log, joined, last_bytes
from bot.forges.buildkite.rest import BuildkiteGone, BuildkiteUnavailable
from fixers.classify.root_causes import classify_report
from fixers.intake import Format, read_report
from tests.conftest import make_settings
from tests.fakes.buildkite.builds import FakeBuild, FakeJob, GeneratedLog, buildkite_log
from tests.fakes.buildkite.server import TOKEN

PYTEST_RUN = (
    Path(__file__).parents[3] / "fixtures" / "logs" / "py312" / "contract_override.console.txt"
).read_text()
CAP = 8 * 1024 * 1024
TWO_GIB = 2 * 1024**3
LOG_PATH = r"/jobs/.*/log$"


@pytest.fixture
def log_settings(tmp_path, buildkite_api):
    return make_settings(
        tmp_path / "data",
        buildkite_api_url=buildkite_api.url,
        buildkite_api_token=SecretStr(TOKEN),
        buildkite_retry_backoff_s=0.01,
        buildkite_max_log_bytes=CAP,
    )


def _job(buildkite_api, log, **fields):
    fake = FakeJob("pytest", log, **fields)
    build = buildkite_api.add_build(
        FakeBuild("acme", "trt-gpu", 3, "git@github.com:acme/trt.git", jobs=[fake])
    )
    job = finished_job(buildkite_api.job_event(build, fake))
    assert job is not None
    return job


def _huge_log() -> GeneratedLog:
    """2 GiB: the agent's preamble, a flood of progress lines, then the real pytest run."""
    run = buildkite_log(PYTEST_RUN.splitlines())
    filler = b"\x1b_bk;t=1785408900000\x07 progress: compiling kernels ............. ok\r\n"
    return GeneratedLog(run[:200], filler, run[200:], TWO_GIB)


def _download_measured(settings, job):
    tracemalloc.start()
    try:
        log = download_job_log(settings, job)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return log, peak


def test_a_log_within_the_cap_is_kept_whole(log_settings, buildkite_api):
    raw = buildkite_log(PYTEST_RUN.splitlines())
    log = download_job_log(log_settings, _job(buildkite_api, raw))
    assert log.body == raw and not log.truncated
    assert len(buildkite_api.calls_to("GET", LOG_PATH)) == 1


def test_a_2_gib_log_costs_the_cap_in_memory_and_on_the_wire(log_settings, buildkite_api):
    huge = _huge_log()
    log, peak = _download_measured(log_settings, _job(buildkite_api, huge))
    assert log.truncated and log.total_bytes == TWO_GIB
    assert len(log.body) <= CAP + 200
    note = f"of this {TWO_GIB}-byte log left out here; REPAIRBOT_BUILDKITE_MAX_LOG_BYTES is {CAP}]"
    assert note.encode() in log.body
    head, tail = log.body.split(b"\n[repairbot: ")
    assert head.startswith(huge.head) and tail.endswith(huge.tail)
    whole, ranged = buildkite_api.calls_to("GET", LOG_PATH)
    assert "range" not in whole.headers and ranged.headers["range"] == f"bytes=-{CAP - CAP // 4}"
    assert ranged.status == 206
    # The first request is dropped after the head: a quarter of the cap was read, and the
    # server got a few MiB more into the kernel's socket buffers before the close, not 2 GiB.
    assert whole.served_bytes < 4 * CAP and ranged.served_bytes == CAP - CAP // 4
    assert peak < 2.5 * CAP, f"peak {peak} bytes"
    # And the failure at the end of it is found.
    findings = classify_report(read_report(BytesIO(log.body), format=Format.CONSOLE))
    assert [f.signature for f in findings] == ["contract-forward-override"]


def test_a_server_that_ignores_the_range_streams_through_in_bounded_memory(
    log_settings, buildkite_api
):
    buildkite_api.serve_ranges = False
    huge = GeneratedLog(
        b"head\r\n", b"x" * 99 + b"\n", b"FAILED tests/test_a.py::test_b\r\n", 96 << 20
    )
    log, peak = _download_measured(log_settings, _job(buildkite_api, huge))
    assert log.total_bytes == 96 << 20 and log.body.endswith(huge.tail)
    assert [c.status for c in buildkite_api.calls_to("GET", LOG_PATH)] == [200, 200]
    assert peak < 2.5 * CAP, f"peak {peak} bytes"


def test_a_chunked_answer_without_a_length_is_cut_as_it_streams(log_settings, buildkite_api):
    buildkite_api.chunked = True
    huge = GeneratedLog(b"head\n", b"y" * 63 + b"\n", b"tail line\n", 40 << 20)
    log, peak = _download_measured(log_settings, _job(buildkite_api, huge))
    assert log.truncated and log.body.startswith(b"head\n") and log.body.endswith(b"tail line\n")
    assert log.total_bytes == 40 << 20 and peak < 3 * CAP


@pytest.mark.parametrize(("status", "why"), [(410, "gone (410: expired"), (404, "gone (404")])
def test_a_gone_log_says_so(log_settings, buildkite_api, status, why):
    with pytest.raises(BuildkiteGone, match=re.escape(why)):
        download_job_log(log_settings, _job(buildkite_api, b"x", log_status=status))


def test_an_empty_log_is_gone(log_settings, buildkite_api):
    with pytest.raises(BuildkiteGone, match="is empty"):
        download_job_log(log_settings, _job(buildkite_api, b""))


def test_nul_bytes_become_replacement_characters_and_invalid_utf8_is_kept(
    log_settings, buildkite_api
):
    raw = b"\x00\x01 binary\xff\xfe noise\nE   TypeError: boom\n"
    log = download_job_log(log_settings, _job(buildkite_api, raw))
    assert log.body == raw.replace(b"\x00", "\ufffd".encode()) and log.total_bytes == len(raw)
    report = read_report(BytesIO(log.body), format=Format.CONSOLE)  # no longer refused as binary
    assert any("invalid UTF-8" in note for note in report.notes), report.notes


def test_a_log_request_that_keeps_failing_is_left_for_later(log_settings, buildkite_api):
    job = _job(buildkite_api, b"log\n")
    buildkite_api.fault("GET", LOG_PATH, 503, times=10)
    with pytest.raises(BuildkiteUnavailable, match="answered 503"):
        download_job_log(log_settings, job, sleep=lambda _: None)
    buildkite_api.fault("GET", LOG_PATH, 429, headers={"Retry-After": "1"})
    slept: list[float] = []
    buildkite_api._faults.clear()
    buildkite_api.fault("GET", LOG_PATH, 429, headers={"Retry-After": "1"})
    assert download_job_log(log_settings, job, sleep=slept.append).body == b"log\n"
    assert slept == [1.0]


def test_last_bytes_keeps_the_end_whatever_the_chunks():
    chunks = [b"abc", b"", b"defgh", b"i", b"jklmnop"]
    assert last_bytes(chunks, 5) == (b"lmnop", 16)
    assert last_bytes([b"ab"], 5) == (b"ab", 2)
    assert last_bytes([], 5) == (b"", 0)


def test_the_cut_falls_on_line_ends():
    body = joined(b"one\ntwo\nthree\nfour", b"ee\nfour\nfive\n", 1000, 64, 11)
    assert body.startswith(b"one\ntwo\n\n[repairbot: ") and body.endswith(b"]\nfour\nfive\n")
    assert b"left out here" in body and b"of this 1000-byte log" in body
