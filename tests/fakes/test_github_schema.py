"""The GitHub double's schema check: strict enough to catch drift, and wired into every route."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import jwt
import pytest

from tests.fakes.github_actions import check_run_event, workflow_job_event
from tests.fakes.github_api import (
    APP_ID,
    INSTALLATION_ID,
    TOKEN,
    FakeGitHub,
    Request,
    fail_on_schema_errors,
    serve,
)
from tests.fakes.github_reviews import REVIEW_ROUTES
from tests.fakes.github_routes import ROUTES, _route
from tests.fakes.github_schema import model_for, validate
from tests.fakes.github_shapes import node_id, repository, timestamp, user
from tests.fakes.github_webhooks import checked

FAKES = Path(__file__).parent
API = "https://api.github.com"


def _reaction(**changes: Any) -> dict[str, Any]:
    reaction = {
        "id": 1,
        "node_id": "MDg6UmVhY3Rpb24x",
        "user": user("octocat", api_url=API),
        "content": "heart",
        "created_at": "2016-05-20T20:09:31Z",
    }
    return {**reaction, **changes}


def test_a_valid_answer_has_no_errors() -> None:
    assert validate("reaction", _reaction()) == []
    assert validate("simple-user", user("repairbot[bot]", "Bot")) == []


def test_an_invented_field_is_an_error_at_any_depth() -> None:
    assert validate("reaction", _reaction(emoji="❤")) == [".emoji: not in the schema"]
    nested = _reaction(user={**user("octocat"), "karma": 7})
    assert validate("reaction", nested) == [".user.karma: not in the schema"]


def test_a_missing_required_field_is_an_error() -> None:
    reaction = _reaction()
    del reaction["node_id"], reaction["user"]["avatar_url"]
    assert validate("reaction", reaction) == [
        ".node_id: Field required",
        ".user.avatar_url: Field required",
    ]


def test_a_wrong_type_is_an_error_even_where_pydantic_would_coerce() -> None:
    assert validate("reaction", _reaction(id="1")) == [".id: Input should be a valid integer"]
    assert validate("reaction", _reaction(content="thumbs")) == [
        ".content: Input should be '+1', '-1', 'laugh', 'confused', 'heart', 'hooray', "
        "'rocket' or 'eyes'"
    ]


def test_timestamps_must_be_in_githubs_format() -> None:
    errors = validate("reaction", _reaction(created_at="2016-05-20T20:09:31.123456+00:00"))
    assert errors == [
        ".created_at: '2016-05-20T20:09:31.123456+00:00' is not GitHub's timestamp format "
        "(2026-07-30T10:55:00Z)"
    ]
    assert validate("reaction", _reaction(created_at=timestamp())) == []


def test_a_list_is_validated_item_by_item() -> None:
    assert validate("reaction", [_reaction(), _reaction(id=None)]) == [
        "[1].id: Input should be a valid integer"
    ]
    assert validate("reaction", []) == []


def test_a_closed_nested_object_refuses_unknown_keys_an_open_one_takes_any() -> None:
    token = {"token": "ghs_x", "expires_at": "2026-07-30T11:55:00Z", "permissions": {"x": "read"}}
    assert validate("installation-token", token) == [".permissions.x: not in the schema"]
    # ``custom_properties`` is additionalProperties in GitHub's description: any key is fine.
    repo = repository("acme/trt", "main", API)
    assert validate("full-repository", {**repo, "custom_properties": {"team": "inference"}}) == []


def test_an_unknown_schema_name_is_refused() -> None:
    with pytest.raises(ValueError, match="no schema 'pull-requests'"):
        validate("pull-requests", {})


def test_node_ids_are_githubs_legacy_global_ids() -> None:
    assert node_id("User", 1) == "MDQ6VXNlcjE="  # user 1's (mojombo), as api.github.com has it


def test_every_route_declares_a_schema_github_has() -> None:
    for method, pattern, _handler, schema in ROUTES:
        if schema is not None:
            assert model_for(schema), f"{method} {pattern.pattern}"


def _schema_argument(node: ast.AST) -> ast.expr | None:
    """The schema given in a route's definition: ``_route(m, p, h, schema)`` or a 4-tuple."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "_route":
        given = [*node.args[3:], *(k.value for k in node.keywords if k.arg == "schema")]
        return given[0] if given else None
    if isinstance(node, ast.Tuple) and len(node.elts) == 4:
        method = node.elts[0]
        if isinstance(method, ast.Constant) and method.value in ("GET", "POST", "PATCH", "PUT"):
            return node.elts[3]
    return None


def test_every_route_without_a_schema_says_why() -> None:
    unexplained, seen = [], 0
    for path in sorted(FAKES.glob("github_*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            schema = _schema_argument(node)
            seen += schema is not None
            is_none = isinstance(schema, ast.Constant) and schema.value is None
            if is_none and not lines[node.lineno - 2].strip().startswith("#"):
                unexplained.append(f"{path.name}:{node.lineno}")
    assert seen >= len(ROUTES), "every route is defined in tests/fakes/github_*.py"
    assert not unexplained, f"a route with no schema needs a comment saying why: {unexplained}"


def _bad_reaction(state: FakeGitHub, request: Request) -> tuple[int, Any]:
    return 200, _reaction(emoji="❤", id=int(request.match["id"]))


def _refusal(state: FakeGitHub, request: Request) -> tuple[int, Any]:
    return 422, {"message": "Validation Failed", "anything": "goes"}


def _untyped(state: FakeGitHub, request: Request) -> tuple[int, Any]:
    return 200, {"some": "json"}


def _get(url: str) -> int:
    call = urllib.request.Request(url, headers={"authorization": f"token {TOKEN}"})
    try:
        with urllib.request.urlopen(call, timeout=10) as answer:
            json.load(answer)
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return error.code


def test_the_server_records_every_2xx_json_answer_outside_the_schema(tmp_path: Path) -> None:
    routes = [
        _route("GET", r"/reactions/(?P<id>\d+)", _bad_reaction, "reaction"),
        _route("GET", r"/refusal", _refusal, "reaction"),
        # Deliberately no schema: a JSON answer on such a route is itself an error.
        _route("GET", r"/untyped", _untyped, None),
    ]
    with serve(tmp_path, routes) as state:
        assert _get(f"{state.url}/reactions/5") == 200
        assert _get(f"{state.url}/refusal") == 422  # error answers are not REST resources
        assert _get(f"{state.url}/untyped") == 200
    assert state.schema_errors == [
        "GET /reactions/5 (reaction).emoji: not in the schema",
        "GET /untyped (None): answers JSON, but its route declares no schema",
    ]
    with pytest.raises(pytest.fail.Exception, match=r"GET /reactions/5 \(reaction\)\.emoji"):
        fail_on_schema_errors(state)


def test_a_webhook_payload_outside_its_schema_is_recorded(tmp_path: Path) -> None:
    state = FakeGitHub(root=tmp_path)
    checked(state, "pull_request", {"action": "opened", "number": "7"})
    assert "webhook pull_request.opened (webhook-pull-request-opened).number: " in "\n".join(
        state.schema_errors
    )


GIT_ENV = {
    "GIT_AUTHOR_NAME": "Alice",
    "GIT_AUTHOR_EMAIL": "alice@example.invalid",
    "GIT_COMMITTER_NAME": "Alice",
    "GIT_COMMITTER_EMAIL": "alice@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _commit(source: Path, name: str, text: str, message: str) -> None:
    (source / name).write_text(text, encoding="utf-8")
    for args in (["add", name], ["commit", "--quiet", "-m", message]):
        subprocess.run(["git", "-C", str(source), *args], check=True, env={**os.environ, **GIT_ENV})


def _call(state: FakeGitHub, method: str, path: str, body: Any = None, auth: str = "") -> Any:
    call = urllib.request.Request(
        state.url + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"authorization": auth or f"token {TOKEN}", "content-type": "application/json"},
    )
    with urllib.request.urlopen(call, timeout=10) as answer:
        assert 200 <= answer.status < 300, (method, path, answer.status)
        return json.load(answer)


def test_a_whole_pull_request_through_every_route_stays_in_the_schema(tmp_path: Path) -> None:
    source = tmp_path / "source"
    subprocess.run(["git", "init", "--quiet", "-b", "main", str(source)], check=True)
    _commit(source, "worker.py", "x = 1\n", "first")
    subprocess.run(["git", "-C", str(source), "checkout", "--quiet", "-b", "fix"], check=True)
    _commit(source, "worker.py", "x = 2\n", "fix it")
    _commit(source, "notes.md", "why\n", "say why")
    with serve(tmp_path / "github", ROUTES) as state:
        repo = state.create_repo("acme/trt", source)
        repo.permissions["maintainer"] = "admin"
        app_jwt = jwt.encode(
            {"iss": str(APP_ID), "iat": int(time.time()) - 60, "exp": int(time.time()) + 540},
            state.private_key_pem,
            "RS256",
        )
        token = _call(
            state,
            "POST",
            f"/app/installations/{INSTALLATION_ID}/access_tokens",
            {},
            f"Bearer {app_jwt}",
        )
        assert token["token"].startswith("ghs_")
        assert _call(state, "GET", "/repos/acme/trt")["full_name"] == "acme/trt"
        pull = _call(
            state,
            "POST",
            "/repos/acme/trt/pulls",
            {"title": "Fix", "head": "fix", "base": "main", "body": "b"},
        )
        number = pull["number"]
        assert (pull["commits"], pull["changed_files"], pull["additions"]) == (2, 2, 2)
        assert [p["number"] for p in _call(state, "GET", "/repos/acme/trt/pulls")] == [number]
        assert _call(state, "GET", f"/repos/acme/trt/pulls/{number}")["mergeable"] is True
        files = _call(state, "GET", f"/repos/acme/trt/pulls/{number}/files")
        assert sorted((f["filename"], f["status"]) for f in files) == [
            ("notes.md", "added"),
            ("worker.py", "modified"),
        ]
        comment = _call(state, "POST", f"/repos/acme/trt/issues/{number}/comments", {"body": "hi"})
        _call(
            state,
            "POST",
            f"/repos/acme/trt/issues/comments/{comment['id']}/reactions",
            {"content": "+1"},
        )
        again = _call(state, "GET", f"/repos/acme/trt/issues/comments/{comment['id']}")
        assert again["reactions"]["+1"] == again["reactions"]["total_count"] == 1
        path = f"/repos/acme/trt/issues/comments/{comment['id']}"
        assert _call(state, "PATCH", path, {"body": "edited"})["body"] == "edited"
        assert len(_call(state, "GET", f"/repos/acme/trt/issues/{number}/comments")) == 1
        head = pull["head"]["sha"]
        _call(
            state,
            "POST",
            f"/repos/acme/trt/statuses/{head}",
            {"state": "success", "context": "repairbot/contracts", "description": "ok"},
        )
        assert [s["state"] for s in _call(state, "GET", f"/repos/acme/trt/statuses/{head}")] == [
            "success"
        ]
        assert len(_call(state, "GET", f"/repos/acme/trt/commits/{head}/statuses")) == 1
        commit = _call(state, "GET", f"/repos/acme/trt/commits/{head}")
        assert commit["commit"]["message"] == "say why" and len(commit["parents"]) == 1
        level = _call(state, "GET", "/repos/acme/trt/collaborators/maintainer/permission")
        assert level["permission"] == "admin"
        state.comment_event("acme/trt", number, "/repairbot help", login="maintainer")
        _commit(source, "worker.py", "x = 3\n", "again")
        subprocess.run(
            ["git", "-C", str(source), "push", "--quiet", str(repo.path), "fix"], check=True
        )
        sync = state.pull_request_event("acme/trt", number, "synchronize")
        assert (sync["before"], sync["after"]) == (head, repo.sha("refs/heads/fix"))
        _call(state, "PATCH", f"/repos/acme/trt/pulls/{number}", {"state": "closed"})
        closed = state.pull_request_event("acme/trt", number, "closed")
        assert closed["pull_request"]["state"] == "closed"
        job = state.add_actions_job("acme/trt", b"log")
        assert _call(state, "GET", f"/repos/acme/trt/actions/jobs/{job.id}")["id"] == job.id
        workflow_job_event(state, job), check_run_event(state, job)
    assert state.schema_errors == []
    served = [(c.method, c.path) for c in state.calls if 200 <= c.status < 300]
    # Every JSON route answered at least once here (reviews: tests/bot/forges/github/).
    unanswered = [
        f"{method} {pattern.pattern}"
        for method, pattern, handler, schema in ROUTES
        if schema is not None
        and (method, pattern, handler, schema) not in REVIEW_ROUTES
        and not any(m == method and pattern.fullmatch(path) for m, path in served)
    ]
    assert unanswered == []
    fail_on_schema_errors(state)  # what the fixture does at teardown: passes
