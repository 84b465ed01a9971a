"""The one GitHub-API double of the test suite: a real HTTP server on 127.0.0.1.

PyGithub (through ``bot.forges.github.forge``) talks to it over HTTP exactly as it would to
api.github.com. Repositories are real bare git repositories on disk, reached through a
``file://`` remote, so pushes and PR heads are real commits. Every request is recorded in
``calls``; faults (secondary and primary rate limits, 5xx, with or without the write having
happened) are queued with ``fault``. A client that retries a rate-limited request before its
``retry-after`` ends is refused again and counted in ``early_retries``, as GitHub would.
GitHub Actions jobs (``add_actions_job``, ``tests/fakes/github_actions.py``) have their logs
served as GitHub does: a 302 from the API to a signed blob URL (under ``/_blobs/``, which takes
no GitHub credentials) that answers the raw log.

Every 2xx JSON answer, and every webhook payload it builds (``github_webhooks.py``), is checked
against GitHub's REST description (``github_schema.py``, shapes in ``github_shapes.py``); what is
off lands in ``schema_errors`` and fails the test when the fixture ends.

Use it through the ``github_api`` fixture (``tests/conftest.py`` re-exports it).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes import github_webhooks
from tests.fakes.github_git import FakeRepo, git_out
from tests.fakes.github_holdings import GitHubHoldings
from tests.fakes.github_schema import validate
from tests.fakes.github_shapes import pull_request

TOKEN = "ghp_fake_personal_token_0123456789"
APP_ID = 4242
INSTALLATION_ID = 77
BOT_LOGIN = "repairbot[bot]"
Handler = Callable[["FakeGitHub", "Request"], tuple[int, Any]]
# An endpoint: method, path pattern, handler, the REST schema of its 2xx answer (None: not JSON).
Route = tuple[str, re.Pattern[str], Handler, str | None]


@dataclass
class Call:
    """One request as the server saw it."""

    method: str
    path: str
    status: int
    body: Any
    at: float
    authorization: str = ""


@dataclass
class Raw:
    """A route's answer that is not JSON: bytes (a log), or a redirect with an empty body."""

    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Fault:
    """A queued failure for requests matching ``method`` and ``path``."""

    method: str
    path: re.Pattern[str]
    status: int
    times: int
    headers: dict[str, str]
    message: str
    after_effect: bool
    retry_after: float = 0.0


@dataclass
class Request:
    """A parsed request handed to a route."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    match: re.Match[str]
    login: str


@dataclass
class FakeGitHub(GitHubHoldings):
    """The server's state and the test-side API (setting up repos, queuing faults, events);
    what it holds, counted, comes from ``GitHubHoldings`` (``github_holdings.py``)."""

    root: Path
    url: str = ""
    calls: list[Call] = field(default_factory=list)
    early_retries: list[str] = field(default_factory=list)
    repos: dict[str, FakeRepo] = field(default_factory=dict)
    jobs: dict[int, Any] = field(default_factory=dict)
    tokens: dict[str, datetime] = field(default_factory=dict)
    schema_errors: list[str] = field(default_factory=list)
    token_lifetime: timedelta = timedelta(hours=1)
    private_key_pem: str = ""
    _faults: list[Fault] = field(default_factory=list)
    _blocked_until: dict[tuple[str, str], float] = field(default_factory=dict)
    _ids: Iterator[int] = field(default_factory=lambda: iter(range(1000, 10**9)))
    lock: threading.RLock = field(default_factory=threading.RLock)

    def __post_init__(self) -> None:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.private_key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        self._public_key = key.public_key()
        self.tokens[TOKEN] = datetime.max.replace(tzinfo=UTC)

    # ----- test-side API -------------------------------------------------------------------
    @property
    def git_url_template(self) -> str:
        """The ``REPAIRBOT_GITHUB_GIT_URL_TEMPLATE`` that points pushes at these repos."""
        return f"file://{self.root}/{{repository}}.git"

    def create_repo(
        self, full_name: str, source: Path, *, default_branch: str = "main"
    ) -> FakeRepo:
        """A repository whose branches are those of the local git repository ``source``."""
        repo = FakeRepo.create(self.root, full_name, source, default_branch)
        repo.api_url = self.url
        self.repos[full_name] = repo
        return repo

    def add_actions_job(self, full_name: str, log: bytes, **fields: Any) -> Any:
        """A finished GitHub Actions job with its log; see ``github_actions.FakeJob``."""
        from tests.fakes.github_actions import FakeJob

        with self.lock:
            job = FakeJob(repository=full_name, id=self.next_id() * 1000, log=log, **fields)
            self.jobs[job.id] = job
        return job

    def next_id(self) -> int:
        """A fresh id (PR numbers and comment ids share the sequence, as on GitHub)."""
        return next(self._ids)

    def fault(
        self,
        method: str,
        path: str,
        *,
        status: int = 502,
        times: int = 1,
        retry_after: float | None = None,
        rate_limit_reset_in: int | None = None,
        after_effect: bool = False,
    ) -> None:
        """Fail the next ``times`` matching requests.

        ``retry_after``: a secondary rate limit (403 with ``retry-after``). ``rate_limit_reset_in``:
        a primary rate limit (403, ``x-ratelimit-remaining: 0``, ``x-ratelimit-reset``).
        ``after_effect``: the write happens and then the response is lost (a 5xx after the fact).
        """
        headers: dict[str, str] = {}
        message = "Server Error"
        wait = 0.0
        if retry_after is not None:
            status, wait = 403, retry_after
            headers["retry-after"] = str(int(retry_after))
            message = "You have exceeded a secondary rate limit. Please wait a few minutes."
        elif rate_limit_reset_in is not None:
            status = 403
            reset = int(time.time()) + rate_limit_reset_in
            wait = reset - time.time()
            headers.update({"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)})
            message = "API rate limit exceeded for installation ID 77."
        with self.lock:
            self._faults.append(
                Fault(method, re.compile(path), status, times, headers, message, after_effect, wait)
            )

    def calls_to(self, method: str, pattern: str) -> list[Call]:
        """Recorded calls whose method and path match."""
        regex = re.compile(pattern)
        return [c for c in self.calls if c.method == method and regex.search(c.path)]

    def pulls(self, full_name: str, state: str = "all") -> list[dict[str, Any]]:
        """The repository's PRs as the API shows them (under the lock: the server adds PRs)."""
        repo = self.repos[full_name]
        with self.lock:
            return [
                self.pull_json(repo, p)
                for p in list(repo.pulls.values())
                if state in ("all", p["state"])
            ]

    def open_pull(self, full_name: str, *, head: str, title: str, login: str = "alice") -> int:
        """A PR opened by a human from ``head`` (a branch already in the repository)."""
        with self.lock:
            return self.repos[full_name].add_pull(self.next_id(), head, None, title, "", login)

    def merge_pull(self, full_name: str, number: int, *, login: str = "maintainer") -> None:
        """Merge a PR: its base branch moves to its head (fast-forward), state closed, merged."""
        with self.lock:
            self.repos[full_name].merge(number, login)

    def pull_request_event(self, full_name: str, number: int, action: str) -> dict[str, Any]:
        """The ``pull_request`` webhook payload GitHub would send now (``github_webhooks``)."""
        with self.lock:
            return github_webhooks.pull_request_event(self, full_name, number, action)

    def comment_event(
        self, full_name: str, number: int, body: str, *, login: str, user_type: str = "User"
    ) -> dict[str, Any]:
        """Post a comment as ``login`` and return the ``issue_comment`` payload GitHub sends."""
        repo = self.repos[full_name]
        with self.lock:
            comment = repo.add_comment(self.next_id(), number, body, login, user_type, self.url)
            return github_webhooks.comment_event(self, full_name, number, comment)

    def pull_json(
        self, repo: FakeRepo, pull: dict[str, Any], *, simple: bool = False
    ) -> dict[str, Any]:
        """A pull request in the REST API's shape (``pull-request``; ``simple``: as listed).

        A PR from a fork keeps the fork in ``pull["head_repo"]``: its ``head.repo``.
        """
        head_repo: FakeRepo = pull.get("head_repo") or repo
        return pull_request(
            pull,
            full_name=repo.full_name,
            head_repo=head_repo.json(self.url, full=False),
            base_repo=repo.json(self.url, full=False),
            api_url=self.url,
            author_association=repo.association(pull["user"]["login"]),
            stats=None if simple else repo.stats(pull["number"]),
        )

    # ----- server side ---------------------------------------------------------------------
    def check_schema(self, what: str, schema: str | None, status: int, payload: Any) -> None:
        """Record in ``schema_errors`` how a 2xx JSON answer departs from GitHub's schema."""
        if not 200 <= status < 300 or isinstance(payload, Raw):
            return
        if schema is None:
            problems = [": answers JSON, but its route declares no schema"]
        else:
            problems = validate(schema, payload)
        with self.lock:
            self.schema_errors += [f"{what} ({schema}){problem}" for problem in problems]

    def authenticate(self, method: str, path: str, authorization: str) -> str | None:
        """The caller's login, or None when the credentials are refused."""
        scheme, _, credential = authorization.partition(" ")
        if path.startswith("/app/"):
            try:
                claims = jwt.decode(credential, self._public_key, algorithms=["RS256"])
            except jwt.PyJWTError:
                return None
            return "app" if str(claims.get("iss")) == str(APP_ID) else None
        expires = self.tokens.get(credential)
        if scheme.lower() not in ("token", "bearer") or expires is None:
            return None
        return BOT_LOGIN if expires > datetime.now(UTC) else None

    def take_fault(self, method: str, path: str) -> Fault | None:
        """The fault that applies to this request, if any, and enforcement of retry-after."""
        with self.lock:
            blocked = self._blocked_until.get((method, path))
            if blocked is not None and time.monotonic() < blocked:
                self.early_retries.append(f"{method} {path}")
                return Fault(
                    method,
                    re.compile(""),
                    403,
                    1,
                    {"retry-after": "1"},
                    "You have exceeded a secondary rate limit.",
                    False,
                )
            for fault in self._faults:
                if fault.method == method and fault.path.search(path) and fault.times > 0:
                    fault.times -= 1
                    if fault.retry_after:
                        self._blocked_until[(method, path)] = time.monotonic() + fault.retry_after
                    return fault
        return None


def _make_handler(state: FakeGitHub, routes: list[Route]) -> type:
    class GitHubHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _serve(self) -> None:
            parsed = urlparse(self.path)
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            query = {k: v[0] for k, v in parse_qs(parsed.query).items()}
            status, payload, headers = self._route(parsed.path, query, body)
            authorization = self.headers.get("authorization", "")
            with state.lock:
                state.calls.append(
                    Call(self.command, parsed.path, status, body, time.monotonic(), authorization)
                )
            answer = payload if isinstance(payload, Raw) else None
            data = answer.body if answer else json.dumps(payload).encode()
            headers.update(answer.headers if answer else {})
            self.send_response(status)
            self.send_header(
                "content-type",
                answer.content_type if answer else "application/json; charset=utf-8",
            )
            self.send_header("content-length", str(len(data)))
            self.send_header("x-ratelimit-limit", "5000")
            self.send_header("x-ratelimit-remaining", headers.pop("x-ratelimit-remaining", "4999"))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _route(
            self, path: str, query: dict[str, str], body: Any
        ) -> tuple[int, Any, dict[str, str]]:
            if path.startswith("/_blobs/"):  # signed blob URLs: no GitHub credentials involved
                login: str | None = ""
            else:
                login = state.authenticate(
                    self.command, path, self.headers.get("authorization", "")
                )
            if login is None:
                return 401, {"message": "Bad credentials"}, {}
            fault = state.take_fault(self.command, path)
            if fault is not None and not fault.after_effect:
                return fault.status, {"message": fault.message}, dict(fault.headers)
            for method, pattern, handler, schema in routes:
                match = pattern.fullmatch(path)
                if method == self.command and match:
                    with state.lock:
                        status, payload = handler(
                            state, Request(self.command, path, query, body, match, login)
                        )
                    if fault is not None:
                        return fault.status, {"message": fault.message}, dict(fault.headers)
                    state.check_schema(f"{self.command} {path}", schema, status, payload)
                    return status, payload, {}
            return 404, {"message": "Not Found"}, {}

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

    return GitHubHandler


@contextmanager
def serve(root: Path, routes: list[Route]) -> Iterator[FakeGitHub]:
    """The double serving ``routes`` on 127.0.0.1 while the block runs."""
    state = FakeGitHub(root=root)
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


def fail_on_schema_errors(state: FakeGitHub) -> None:
    """Fail the test when the double served anything outside GitHub's REST schema."""
    if state.schema_errors:
        pytest.fail(
            "the GitHub double answered outside GitHub's REST schema "
            "(tests/fakes/github_schema.py):\n" + "\n".join(state.schema_errors),
            pytrace=False,
        )


@pytest.fixture
def github_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeGitHub]:
    """A running fake GitHub API on 127.0.0.1; repositories live in a temporary folder.

    Every 2xx JSON answer is validated against GitHub's REST description; the test fails at
    teardown when one was not valid.
    """
    from tests.fakes.github_routes import ROUTES

    with serve(tmp_path_factory.mktemp("github"), ROUTES) as state:
        yield state
    fail_on_schema_errors(state)


__all__ = ["APP_ID", "BOT_LOGIN", "INSTALLATION_ID", "TOKEN", "FakeGitHub", "git_out", "github_api"]
