"""The GitLab-API double: a real HTTP server on 127.0.0.1 speaking GitLab's REST ``/api/v4``.

python-gitlab (through ``bot.forges.gitlab``) and the intake's trace fetch talk to it over HTTP
as they would to GitLab. Projects are real bare git repositories on disk, reached through a
``file://`` remote (``git_url_template``), so pushed fix branches are real commits. Every
request is recorded in ``calls``; ``fault`` queues 429s (with ``Retry-After`` or
``RateLimit-Reset``) and 5xx answers. A job's trace is served from bytes or from a generator of
chunks (a 2 GB trace is never held in memory), or answers 404/410 when it is gone.

Every 2xx JSON answer is checked against ``schema.py``; what is off lands in ``schema_errors``
and fails the test when the ``gitlab_api`` fixture ends.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import pytest

from tests.fakes.github_git import git_out
from tests.fakes.gitlab.projects import FakeJob, FakeProject, api_time
from tests.fakes.gitlab.schema import validate

TOKEN = "glpat-fake-token-0123456789abcdef"
BOT_USERNAME = "repairbot"


@dataclass
class Call:
    """One request as the server saw it."""

    method: str
    path: str
    status: int
    body: Any
    token: str


@dataclass
class Stream:
    """A route's answer that is not JSON: chunks of bytes with a known total length."""

    chunks: Iterable[bytes]
    length: int
    content_type: str = "text/plain"


@dataclass
class Fault:
    """The next ``times`` requests matching ``method`` and ``path`` answer ``status``."""

    method: str
    path: re.Pattern[str]
    status: int
    times: int
    headers: dict[str, str]
    after_effect: bool = False  # the request is carried out, then its answer is lost


@dataclass
class Request:
    """A parsed request handed to a route."""

    method: str
    query: dict[str, str]
    body: Any
    match: re.Match[str]
    project: FakeProject | None


Handler = Callable[["FakeGitLab", Request], tuple[int, Any]]
Route = tuple[str, re.Pattern[str], Handler, str | None]


@dataclass
class FakeGitLab:
    """The server's state and the test-side API."""

    root: Path
    url: str = ""
    calls: list[Call] = field(default_factory=list)
    projects: dict[int, FakeProject] = field(default_factory=dict)
    jobs: dict[int, FakeJob] = field(default_factory=dict)
    schema_errors: list[str] = field(default_factory=list)
    _faults: list[Fault] = field(default_factory=list)
    _ids: Iterator[int] = field(default_factory=lambda: iter(range(100, 10**9)))
    lock: threading.RLock = field(default_factory=threading.RLock)

    @property
    def git_url_template(self) -> str:
        """The ``REPAIRBOT_GITLAB_GIT_URL_TEMPLATE`` that points git at these projects."""
        return f"file://{self.root}/{{project}}.git"

    def next_id(self) -> int:
        """A fresh id (every kind of object shares the sequence)."""
        with self.lock:
            return next(self._ids)

    def create_project(
        self, path: str, source: Path, *, default_branch: str = "main"
    ) -> FakeProject:
        """A project whose repository is a bare clone of the local repository ``source``."""
        bare = self.root / f"{path}.git"
        bare.parent.mkdir(parents=True, exist_ok=True)
        git_out(source.parent, "clone", "--bare", "--quiet", str(source), str(bare))
        project = FakeProject(self.next_id(), path, bare, default_branch, self.url)
        with self.lock:
            self.projects[project.id] = project
        return project

    def new_project(self, path: str) -> FakeProject:
        """A project whose repository has one empty commit on ``main``."""
        source = self.root / "_sources" / path
        source.mkdir(parents=True)
        git_out(source, "init", "-q", "-b", "main")
        git_out(
            source,
            "-c",
            "user.name=a",
            "-c",
            "user.email=a@b.invalid",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "start",
        )
        return self.create_project(path, source)

    def add_pipeline(
        self,
        project: FakeProject,
        *,
        sha: str,
        ref: str,
        jobs: list[FakeJob],
        merge_request_iid: int | None = None,
    ) -> dict[str, Any]:
        """A finished pipeline of ``jobs`` (each given its id here); its API object."""
        with self.lock:
            pipeline = project.add_pipeline(self.next_id(), sha, ref, merge_request_iid)
            for job in jobs:
                job.id, job.pipeline_id, job.project_id = self.next_id(), pipeline["id"], project.id
                self.jobs[job.id] = job
                pipeline["jobs"].append(job)
            return pipeline

    def fault(
        self,
        method: str,
        path: str,
        *,
        status: int = 502,
        times: int = 1,
        retry_after: int | None = None,
        reset_in: int | None = None,
        after_effect: bool = False,
    ) -> None:
        """Answer the next ``times`` matching requests with ``status`` (a 429 with
        ``Retry-After`` or ``RateLimit-Reset`` when one is given; ``after_effect``: a 5xx
        after the request was carried out)."""
        headers: dict[str, str] = {}
        if retry_after is not None:
            status, headers["Retry-After"] = 429, str(retry_after)
        elif reset_in is not None:
            status = 429
            headers.update(
                {"RateLimit-Remaining": "0", "RateLimit-Reset": str(int(time.time()) + reset_in)}
            )
        with self.lock:
            self._faults.append(
                Fault(method, re.compile(path), status, times, headers, after_effect)
            )

    def calls_to(self, method: str, pattern: str) -> list[Call]:
        """Recorded calls whose method and path match."""
        regex = re.compile(pattern)
        with self.lock:
            return [c for c in self.calls if c.method == method and regex.search(c.path)]

    def project_by_ref(self, ref: str) -> FakeProject | None:
        """A project by id or URL-encoded path, as the API takes it."""
        name = unquote(ref)
        with self.lock:
            if name.isdigit():
                return self.projects.get(int(name))
            return next((p for p in self.projects.values() if p.path == name), None)

    def take_fault(self, method: str, path: str) -> Fault | None:
        """The queued fault this request meets, if any."""
        with self.lock:
            for fault in self._faults:
                if fault.method == method and fault.path.search(path) and fault.times > 0:
                    fault.times -= 1
                    return fault
        return None

    def check_schema(self, what: str, schema: str | None, status: int, payload: Any) -> None:
        """Record how a 2xx JSON answer departs from the schema."""
        if not 200 <= status < 300 or isinstance(payload, Stream):
            return
        problems = validate(schema, payload) if schema else [": JSON with no schema declared"]
        with self.lock:
            self.schema_errors += [f"{what} ({schema}){problem}" for problem in problems]


def _make_handler(state: FakeGitLab, routes: list[Route]) -> type:
    class GitLabHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _serve(self) -> None:
            parsed = urlparse(self.path)
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = _body(raw, self.headers.get("content-type", ""))
            query = {k: v[0] for k, v in parse_qs(parsed.query).items()}
            status, payload, headers = self._route(parsed.path, query, body)
            with state.lock:
                state.calls.append(
                    Call(
                        self.command,
                        parsed.path,
                        status,
                        body,
                        self.headers.get("private-token", ""),
                    )
                )
            stream = payload if isinstance(payload, Stream) else None
            data = b"" if stream else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", stream.content_type if stream else "application/json")
            self.send_header("content-length", str(stream.length if stream else len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            try:
                for chunk in stream.chunks if stream else [data]:
                    self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                return  # the client stopped reading: fine for a trace it cut short

        def _route(
            self, path: str, query: dict[str, str], body: Any
        ) -> tuple[int, Any, dict[str, str]]:
            if self.headers.get("private-token") != TOKEN:
                return 401, {"message": "401 Unauthorized"}, {}
            fault = state.take_fault(self.command, path)
            if fault is not None and not fault.after_effect:
                return fault.status, {"message": f"{fault.status} fault"}, dict(fault.headers)
            for method, pattern, handler, schema in routes:
                match = pattern.fullmatch(path)
                if method != self.command or not match:
                    continue
                project = (
                    state.project_by_ref(match["project"])
                    if "project" in pattern.groupindex
                    else None
                )
                if "project" in pattern.groupindex and project is None:
                    return 404, {"message": "404 Project Not Found"}, {}
                with state.lock:
                    status, payload = handler(
                        state, Request(self.command, query, body, match, project)
                    )
                if fault is not None:  # carried out; the answer is lost
                    return fault.status, {"message": f"{fault.status} fault"}, dict(fault.headers)
                state.check_schema(f"{self.command} {path}", schema, status, payload)
                return status, payload, {}
            return 404, {"error": "404 Not Found"}, {}

        do_GET = do_POST = do_PUT = _serve

    return GitLabHandler


def _body(raw: bytes, content_type: str) -> Any:
    if not raw:
        return None
    if content_type.startswith("application/json"):
        return json.loads(raw)
    return {k: v[0] for k, v in parse_qs(raw.decode()).items()}


@contextmanager
def serve(root: Path, routes: list[Route]) -> Iterator[FakeGitLab]:
    """The double serving ``routes`` on 127.0.0.1 while the block runs."""
    state = FakeGitLab(root=root)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(state, routes))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def gitlab_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeGitLab]:
    """A running GitLab double; the test fails at teardown if it answered outside the schema."""
    from tests.fakes.gitlab.routes import ROUTES

    with serve(tmp_path_factory.mktemp("gitlab"), ROUTES) as state:
        yield state
    if state.schema_errors:
        pytest.fail(
            "the GitLab double answered outside its schema (tests/fakes/gitlab/schema.py):\n"
            + "\n".join(state.schema_errors),
            pytrace=False,
        )


__all__ = ["BOT_USERNAME", "TOKEN", "FakeGitLab", "Stream", "api_time", "gitlab_api"]
