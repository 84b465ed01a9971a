"""A Buildkite job's raw log (``GET .../jobs/{id}/log``, ``Accept: text/plain``), in bounded memory.

A log up to ``REPAIRBOT_BUILDKITE_MAX_LOG_BYTES`` is kept whole. A longer one is kept as its first
quarter and its last three quarters (where pytest's summary is), cut at line ends, with a line
saying how much was left out: the head is read from the start of the log and the download is
stopped there, the tail is asked for with a suffix range (``Range: bytes=-N``, which Buildkite's
log endpoint serves as ``206``), so a 2 GB log costs the cap in memory and about the cap on the
wire. Should the range be ignored (a ``200``), the whole log streams through and only its last
bytes are kept. NUL bytes, which make the console reader refuse a log as binary, are kept as
U+FFFD like any other undecodable byte. A log that is gone (404, 410) or empty raises
``BuildkiteGone``: the intake records that as the report's outcome.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import httpx

from bot.config import Settings
from bot.forges.buildkite.events import BuildkiteJob
from bot.forges.buildkite.rest import BuildkiteGone, BuildkiteRefused, client, request

CHUNK_BYTES = 1 << 20
PLAIN = {"Accept": "text/plain"}
REPLACEMENT = "\ufffd".encode()
_TOTAL = re.compile(r"/(\d+)\s*$")


@dataclass(frozen=True)
class JobLog:
    """A log as kept: its bytes, and how long it really was."""

    body: bytes
    total_bytes: int

    @property
    def truncated(self) -> bool:
        """Whether part of it was left out."""
        return self.total_bytes > len(self.body)


def _read(chunks: Iterable[bytes], limit: int) -> bytearray:
    """At most ``limit`` bytes of ``chunks``, reading no further than needed."""
    kept = bytearray()
    for chunk in chunks:
        kept += memoryview(chunk)[: limit - len(kept)]
        if len(kept) >= limit:
            break
    return kept


def last_bytes(chunks: Iterable[bytes], limit: int) -> tuple[bytes, int]:
    """The last ``limit`` bytes of ``chunks`` and how many there were in all (memory: about
    ``limit`` plus one chunk)."""
    tail: deque[bytes] = deque()
    size = total = 0
    for chunk in chunks:
        total += len(chunk)
        tail.append(chunk)
        size += len(chunk)
        while size - len(tail[0]) >= limit:
            size -= len(tail.popleft())
    return b"".join(tail)[-limit:] if limit else b"", total


def joined(
    head: bytes | bytearray, tail: bytes | bytearray, total: int, limit: int, head_cap: int
) -> bytes:
    """The first ``head_cap`` bytes of ``head`` up to their last line end, a note of what is
    left out, ``tail`` from its first line end (one copy: the parts are views until joined)."""
    head_cap = min(head_cap, len(head))
    head_view = memoryview(head)[: head.rfind(b"\n", 0, head_cap) + 1 or head_cap]
    tail_view = memoryview(tail)[tail.find(b"\n") + 1 :]
    left_out = total - len(head_view) - len(tail_view)
    note = (
        f"\n[repairbot: {left_out} bytes of this {total}-byte log left out here; "
        f"REPAIRBOT_BUILDKITE_MAX_LOG_BYTES is {limit}]\n"
    ).encode()
    return b"".join((head_view, note, tail_view))


def _without_nul(body: bytes | bytearray) -> bytes:
    """``body`` with NUL bytes as U+FFFD (copied only when it has one)."""
    if body.find(b"\x00") == -1:
        return bytes(body) if isinstance(body, bytearray) else body
    return bytes(body).replace(b"\x00", REPLACEMENT)


def _checked(response: httpx.Response, job: BuildkiteJob) -> None:
    status = response.status_code
    if status in (404, 410):
        why = "expired or deleted" if status == 410 else "deleted, or not visible to our token"
        raise BuildkiteGone(f"the log of Buildkite job {job.job_id} is gone ({status}: {why})")
    if status not in (200, 206):
        raise BuildkiteRefused(
            f"the log of Buildkite job {job.job_id}: Buildkite answered {status}"
        )


def _declared(response: httpx.Response) -> int | None:
    """The whole log's length, when the answer says it (Content-Range, else Content-Length)."""
    found = _TOTAL.search(response.headers.get("content-range", ""))
    if response.status_code == 206:
        return int(found[1]) if found else None
    length = response.headers.get("content-length", "")
    return int(length) if length.isdigit() else None


def _tail(
    http: httpx.Client,
    settings: Settings,
    job: BuildkiteJob,
    size: int,
    sleep: Callable[[float], None],
) -> tuple[bytes | bytearray, int | None]:
    """The log's last ``size`` bytes, and its whole length when known."""
    ranged = {**PLAIN, "Range": f"bytes=-{size}"}
    with request(http, settings, "GET", job.log_path, headers=ranged, sleep=sleep) as response:
        if response.status_code not in (400, 416):
            _checked(response, job)
            if response.status_code == 206:
                return _read(response.iter_bytes(CHUNK_BYTES), size), _declared(response)
            return last_bytes(response.iter_bytes(CHUNK_BYTES), size)
    # The range was refused: the whole log streams through, and its end is kept.
    with request(http, settings, "GET", job.log_path, headers=PLAIN, sleep=sleep) as response:
        _checked(response, job)
        return last_bytes(response.iter_bytes(CHUNK_BYTES), size)


def download_job_log(
    settings: Settings, job: BuildkiteJob, *, sleep: Callable[[float], None] = time.sleep
) -> JobLog:
    """Job ``job``'s log, bounded (see the module docstring)."""
    limit = settings.buildkite_max_log_bytes
    head_cap = limit // 4
    with client(settings) as http:
        with request(http, settings, "GET", job.log_path, headers=PLAIN, sleep=sleep) as response:
            _checked(response, job)
            declared = _declared(response)
            # A log declared too long is read only as far as its head; the download stops there.
            longer = declared is not None and declared > limit
            first = _read(response.iter_bytes(CHUNK_BYTES), head_cap if longer else limit + 1)
        if not longer and len(first) <= limit:
            if not first:
                raise BuildkiteGone(f"the log of Buildkite job {job.job_id} is empty")
            return JobLog(_without_nul(first), len(first))
        tail, total = _tail(http, settings, job, limit - head_cap, sleep)
    total = max(total or 0, declared or 0, len(first))
    body = joined(first, tail, total, limit, head_cap)
    del first, tail
    return JobLog(_without_nul(body), total)
