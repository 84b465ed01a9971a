"""The Buildkite-API double: a real HTTP server on 127.0.0.1 speaking Buildkite's REST ``/v2``.

The intake (``bot.forges.buildkite``) talks to it over HTTP as it would to api.buildkite.com:
``GET`` a build with its jobs, ``GET``/``HEAD`` a job's log (``Accept: text/plain``; a suffix
``Range: bytes=-N`` answered ``206`` with ``Content-Range``, as Buildkite documents), and ``PUT``
a rebuild (a new build, ``rebuilt_from`` the old one). Requests without the bearer token are
answered 401. Every request is recorded in ``calls``, with the bytes of log it served; ``fault``
queues 429s (with ``RateLimit-Reset`` / ``Retry-After``) and 5xx answers. A log can be bytes or
a ``GeneratedLog`` streamed range by range (a 2 GB log is never held), can be gone (404/410),
and ``serve_ranges = False`` plays a server that ignores ranges.

Every 2xx JSON answer and every webhook body it builds is checked against ``schema.py``; what
is off lands in ``schema_errors`` and fails the test when the ``buildkite_api`` fixture ends.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.fakes.buildkite.builds import SENDER, FakeBuild, FakeJob, log_bytes, log_length
from tests.fakes.buildkite.schema import validate

TOKEN = "bkua_fake_api_token_0123456789abcdef0123"
WEB_URL = "https://buildkite.com"
BUILD = r"^/v2/organizations/(?P<org>[^/]+)/pipelines/(?P<pipeline>[^/]+)/builds/(?P<number>\d+)"
_SUFFIX_RANGE = re.compile(r"^bytes=-(\d+)$")


@dataclass
class Call:
    """One request as the server saw it."""

    method: str
    path: str
    status: int
    headers: dict[str, str]
    served_bytes: int = 0


@dataclass
class Fault:
    """The next ``times`` requests matching ``method`` and ``path`` answer ``status``."""

    method: str
    path: re.Pattern[str]
    status: int
    times: int
    headers: dict[str, str]
    body: bytes | None = None  # instead of a JSON message


@dataclass
class Answer:
    """What a route answers: a status, JSON or a log range, and headers."""

    status: int
    json: Any = None
    log: Any = None  # (log, start, end) to stream
    raw: bytes | None = None  # a body that is not JSON
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeBuildkite:
    """The server's state and the test-side API: builds, faults, webhook bodies."""

    url: str = ""
    builds: dict[tuple[str, str, int], FakeBuild] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    schema_errors: list[str] = field(default_factory=list)
    serve_ranges: bool = True
    chunked: bool = False  # logs sent with Transfer-Encoding: chunked, no Content-Length
    _faults: list[Fault] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)

    # ----- test-side API -------------------------------------------------------------------
    def add_build(self, build: FakeBuild) -> FakeBuild:
        """Serve ``build`` (and its jobs' logs)."""
        with self.lock:
            self.builds[(build.organization, build.pipeline, build.number)] = build
        return build

    def fault(
        self,
        method: str,
        path: str,
        status: int,
        *,
        times: int = 1,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> None:
        """Answer the next ``times`` matching requests with ``status`` (and ``headers``, and
        ``body`` instead of a JSON message)."""
        fault = Fault(method, re.compile(path), status, times, headers or {}, body)
        with self.lock:
            self._faults.append(fault)

    def calls_to(self, method: str, path: str) -> list[Call]:
        """The recorded calls of ``method`` whose path matches the regex ``path``."""
        with self.lock:
            return [c for c in self.calls if c.method == method and re.search(path, c.path)]

    def build_event(self, build: FakeBuild, event: str = "build.finished") -> dict[str, Any]:
        """The body Buildkite's webhook sends for ``event`` of ``build`` (no jobs in it)."""
        body = {
            "event": event,
            "build": build.json(self.url, WEB_URL, jobs=False),
            "pipeline": build.pipeline_json(self.url, WEB_URL),
            "sender": SENDER,
        }
        return self._checked("build-event", body)

    def job_event(
        self, build: FakeBuild, job: FakeJob, event: str = "job.finished"
    ) -> dict[str, Any]:
        """The body Buildkite's webhook sends for ``event`` of ``job``."""
        body = {
            "event": event,
            "job": job.json(build, self.url, WEB_URL),
            "build": build.json(self.url, WEB_URL, jobs=False),
            "pipeline": build.pipeline_json(self.url, WEB_URL),
            "sender": SENDER,
        }
        return self._checked("job-event", body)

    def _checked(self, schema: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.schema_errors += [f"{schema}{problem}" for problem in validate(schema, body)]
        return body

    # ----- the server's side -----------------------------------------------------------------
    def take_fault(self, method: str, path: str) -> Fault | None:
        """The fault queued for this request, if any (counted down)."""
        with self.lock:
            for fault in self._faults:
                if fault.method == method and fault.times > 0 and fault.path.search(path):
                    fault.times -= 1
                    return fault
        return None

    def build_for(self, match: re.Match[str]) -> FakeBuild | None:
        """The build a path names."""
        with self.lock:
            return self.builds.get((match["org"], match["pipeline"], int(match["number"])))


def get_build(state: FakeBuildkite, match: re.Match[str], headers: dict[str, str]) -> Answer:
    build = state.build_for(match)
    if build is None:
        return Answer(404, {"message": "No build found"})
    body = build.json(state.url, WEB_URL)
    state.schema_errors += [f"build{problem}" for problem in validate("build", body)]
    return Answer(200, body)


def rebuild(state: FakeBuildkite, match: re.Match[str], headers: dict[str, str]) -> Answer:
    build = state.build_for(match)
    if build is None:
        return Answer(404, {"message": "No build found"})
    with state.lock:
        number = max(
            n for (o, p, n) in state.builds if (o, p) == (build.organization, build.pipeline)
        )
        again = FakeBuild(
            build.organization,
            build.pipeline,
            number + 1,
            build.repository,
            commit=build.commit,
            branch=build.branch,
            state="scheduled",
            pull_request=build.pull_request,
            rebuilt_from=build,
        )
        state.builds[(again.organization, again.pipeline, again.number)] = again
    body = again.json(state.url, WEB_URL)
    state.schema_errors += [f"rebuild{problem}" for problem in validate("build", body)]
    return Answer(200, body)


def job_log(state: FakeBuildkite, match: re.Match[str], headers: dict[str, str]) -> Answer:
    build = state.build_for(match)
    job = next((j for j in build.jobs if j.id == match["job"]), None) if build else None
    if build is None or job is None:
        return Answer(404, {"message": "No job found"})
    if job.log_status != 200:
        return Answer(job.log_status, {"message": "Log is no longer available"})
    total = log_length(job.log)
    plain = "text/plain" in headers.get("accept", "") or match["ext"] == ".txt"
    wanted = headers.get("range")
    if not plain:  # Buildkite's JSON form: small logs only on this double
        content = b"".join(log_bytes(job.log)).decode("utf-8", "replace")
        return Answer(200, {"url": f"{state.url}{match[0]}", "content": content, "size": total})
    if wanted is None or not state.serve_ranges:
        return Answer(200, log=(job.log, 0, total), headers={"Accept-Ranges": "bytes"})
    suffix = _SUFFIX_RANGE.match(wanted)
    if suffix is None or int(suffix[1]) == 0:
        return Answer(400, {"message": "Only suffix byte ranges (bytes=-N) are supported"})
    if total == 0:
        return Answer(416, {"message": "The job log is empty"})
    start = max(total - int(suffix[1]), 0)
    return Answer(
        206,
        log=(job.log, start, total),
        headers={"Accept-Ranges": "bytes", "Content-Range": f"bytes {start}-{total - 1}/{total}"},
    )


Route = tuple[
    str, re.Pattern[str], Callable[[FakeBuildkite, re.Match[str], dict[str, str]], Answer]
]
ROUTES: list[Route] = [
    ("GET", re.compile(BUILD + "$"), get_build),
    ("PUT", re.compile(BUILD + "/rebuild$"), rebuild),
    ("GET", re.compile(BUILD + r"/jobs/(?P<job>[^/]+)/log(?P<ext>\.txt)?$"), job_log),
    ("HEAD", re.compile(BUILD + r"/jobs/(?P<job>[^/]+)/log(?P<ext>\.txt)?$"), job_log),
]


def _answer(state: FakeBuildkite, method: str, path: str, headers: dict[str, str]) -> Answer:
    if headers.get("authorization") != f"Bearer {TOKEN}":
        return Answer(401, {"message": "Authentication required: a valid API access token"})
    fault = state.take_fault(method, path)
    if fault is not None:
        message = {"message": f"fault {fault.status}"}
        return Answer(fault.status, message, headers=fault.headers, raw=fault.body)
    for route_method, pattern, handler in ROUTES:
        match = pattern.match(path)
        if match is not None and route_method == method:
            return handler(state, match, headers)
    return Answer(404, {"message": "Not Found"})


def _handler(state: FakeBuildkite) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            if length:
                self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            path = self.path.split("?", 1)[0]
            answer = _answer(state, self.command, path, headers)
            call = Call(self.command, path, answer.status, headers)
            with state.lock:
                state.calls.append(call)
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            if answer.log is None:
                data = answer.raw if answer.raw is not None else json.dumps(answer.json).encode()
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                return
            log, start, end = answer.log
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            if state.chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(end - start))
            self.end_headers()
            if self.command != "HEAD":
                self._stream(call, log_bytes(log, start, end))

        def _stream(self, call: Call, chunks: Iterator[bytes]) -> None:
            try:
                for chunk in chunks:
                    framed = b"%x\r\n%s\r\n" % (len(chunk), chunk) if state.chunked else chunk
                    self.wfile.write(framed)
                    call.served_bytes += len(chunk)
                if state.chunked:
                    self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
                self.close_connection = True

        do_GET = do_PUT = do_HEAD = _serve

    return Handler


@pytest.fixture
def buildkite_api() -> Iterator[FakeBuildkite]:
    """A running Buildkite double; fails the test if it answered off-schema."""
    state = FakeBuildkite()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
    assert not state.schema_errors, "\n".join(state.schema_errors)
