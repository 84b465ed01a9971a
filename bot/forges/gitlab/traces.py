"""A GitLab job's trace (``GET /projects/:id/jobs/:job_id/trace``), streamed in bounded memory.

A trace longer than ``gitlab_max_trace_bytes`` is kept as its first quarter and its last three
quarters (where pytest's summary is), cut at line ends, with a line saying how much was left
out: a 2 GB trace costs that many bytes of memory, not 2 GB. A trace that is gone — 404 or 410
(expired artifacts, an erased job) or an empty one — raises ``TraceGone``: the intake records
that as the report's outcome (``bot.intake.gitlab``).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bot.config import Settings
from bot.forges.gitlab.rest import GitLabRefused, client, get

CHUNK_BYTES = 1 << 20


class TraceGone(LookupError):
    """The job's trace cannot be had any more; the message says why."""


@dataclass(frozen=True)
class Trace:
    """A trace as kept: its bytes, and how long it really was."""

    body: bytes
    total_bytes: int

    @property
    def truncated(self) -> bool:
        """Whether part of it was left out."""
        return self.total_bytes > len(self.body)


def bounded(chunks: Iterable[bytes], limit: int) -> Trace:
    """The stream's bytes when they fit in ``limit``; else its head and tail with a line that
    says what was left out between them (memory: about twice ``limit`` at most)."""
    head_cap = limit // 4
    tail_cap = limit - head_cap
    head = bytearray()
    tail: deque[bytes] = deque()
    tail_size = total = 0
    for chunk in chunks:
        total += len(chunk)
        if len(head) < head_cap:
            take = head_cap - len(head)
            head += chunk[:take]
            chunk = chunk[take:]
        if chunk:
            tail.append(chunk)
            tail_size += len(chunk)
            while tail and tail_size - len(tail[0]) >= tail_cap:
                tail_size -= len(tail.popleft())
    joined = b"".join(tail)
    tail.clear()
    if total <= limit:
        return Trace(bytes(head) + joined, total)
    head_end = head.rfind(b"\n") + 1 or len(head)
    cut = max(len(joined) - tail_cap, 0)
    tail_start = joined.find(b"\n", cut) + 1 or cut
    kept_head, kept_tail = memoryview(head)[:head_end], memoryview(joined)[tail_start:]
    left_out = total - len(kept_head) - len(kept_tail)
    note = (
        f"[repairbot: {left_out} bytes of this {total}-byte trace left out here; "
        f"REPAIRBOT_GITLAB_MAX_TRACE_BYTES is {limit}]\n"
    ).encode()
    if kept_head and head_end == len(head) and not head.endswith(b"\n"):
        note = b"\n" + note  # a head with no line end at all
    return Trace(b"".join([kept_head, note, kept_tail]), total)


def download_trace(
    settings: Settings,
    project_id: int,
    job_id: int,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> Trace:
    """Job ``job_id``'s trace, bounded (see the module docstring)."""
    path = f"/projects/{project_id}/jobs/{job_id}/trace"
    with client(settings) as http, get(http, settings, path, sleep=sleep) as response:
        status = response.status_code
        if status in (404, 410):
            raise TraceGone(
                f"the trace of job {job_id} is gone ({status}): expired or erased on GitLab"
            )
        if status != 200:
            raise GitLabRefused(f"the trace of job {job_id}: GitLab answered {status}")
        trace = bounded(response.iter_bytes(CHUNK_BYTES), settings.gitlab_max_trace_bytes)
    if trace.total_bytes == 0:
        raise TraceGone(f"the trace of job {job_id} is empty: erased, or the job never ran")
    return trace
