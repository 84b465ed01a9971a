"""Job traces: bounded in memory however long, cut at line ends with a note, and gone ones."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

import pytest

from bot.forges.gitlab.traces import TraceGone, bounded, download_trace
from tests.fakes.gitlab.projects import FakeJob

LINE = b"tests/test_workers.py::test_forward[case-17] PASSED" + b" " * 12 + b"\n"  # 64 bytes


def _lines(count: int, *, last: bytes = b"") -> Iterator[bytes]:
    block = LINE * 16_384  # 1 MiB
    for _ in range(count * len(LINE) // len(block)):
        yield block
    yield last


def test_a_trace_within_the_limit_is_kept_whole():
    trace = bounded([b"abc\n", b"def\n"], 4096)
    assert trace.body == b"abc\ndef\n" and trace.total_bytes == 8 and not trace.truncated


def test_a_longer_trace_keeps_its_head_and_tail_cut_at_line_ends_with_a_note():
    chunks = [b"head %04d\n" % i for i in range(1000)]  # 10,000 bytes
    trace = bounded(chunks, 4096)
    head, _, rest = trace.body.partition(b"[repairbot: ")
    note, _, tail = rest.partition(b"]\n")
    assert trace.truncated and trace.total_bytes == 10_000 and len(trace.body) <= 4096 + 120
    assert head.startswith(b"head 0000\n") and head.endswith(b"head 0101\n")
    assert tail.startswith(b"head ") and tail.endswith(b"head 0999\n")
    left_out = 10_000 - len(head) - len(tail)
    assert note == b"%d bytes of this 10000-byte trace left out here; " % left_out + (
        b"REPAIRBOT_GITLAB_MAX_TRACE_BYTES is 4096"
    )
    every_line = (head + tail).splitlines()
    assert all(line.startswith(b"head ") and len(line) == 9 for line in every_line)


@pytest.mark.slow
def test_a_2_gb_trace_is_streamed_from_gitlab_in_bounded_memory(gl_settings, gitlab_api):
    """Measured here: 4.5 s, and a peak of 33 MiB of Python allocations (the double's included)
    for a 16 MiB limit, where reading the trace whole would take 2 GiB."""
    project = gitlab_api.new_project("gpu/trt")
    total = 2 * 1024**3
    summary = b"FAILED tests/test_workers.py::test_forward - TypeError: boom\n"
    job = FakeJob("unit", trace_chunks=lambda: _lines(total // len(LINE), last=summary))
    job.trace_length = total + len(summary)
    gitlab_api.add_pipeline(project, sha="c" * 40, ref="main", jobs=[job])
    limit = 16 * 1024 * 1024
    settings = gl_settings.model_copy(update={"gitlab_max_trace_bytes": limit})
    tracemalloc.start()
    try:
        trace = download_trace(settings, project.id, job.id)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert trace.total_bytes == job.trace_length and trace.body.endswith(summary)
    assert b"bytes of this %d-byte trace left out here" % job.trace_length in trace.body
    assert len(trace.body) <= limit + 200
    assert peak < 2 * limit + 8 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB"


@pytest.mark.parametrize(
    ("job", "message"),
    [
        (FakeJob("unit", trace_status=410), r"is gone \(410\): expired or erased"),
        (FakeJob("unit", trace=b""), "is empty"),
    ],
)
def test_a_trace_that_is_gone_raises_trace_gone(gl_settings, gitlab_api, job, message):
    project = gitlab_api.new_project("gpu/trt")
    gitlab_api.add_pipeline(project, sha="c" * 40, ref="main", jobs=[job])
    with pytest.raises(TraceGone, match=message):
        download_trace(gl_settings, project.id, job.id)
