"""The REST endpoints the fake GitHub implements, one small function per endpoint."""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime
from typing import Any

from tests.fakes.github_actions import get_job, job_log_blob, job_logs
from tests.fakes.github_api import INSTALLATION_ID, FakeGitHub, Handler, Request, Route
from tests.fakes.github_forks import create_cross_pull, cross_repository
from tests.fakes.github_git import FakeRepo
from tests.fakes.github_reviews import REVIEW_ROUTES
from tests.fakes.github_shapes import (
    REACTIONS,
    collaborator,
    node_id,
    reaction_rollup,
    timestamp,
    user,
)

REPO = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
Answer = tuple[int, Any]


def _repo(state: FakeGitHub, request: Request) -> FakeRepo | None:
    return state.repos.get(f"{request.match['owner']}/{request.match['name']}")


def _not_found() -> Answer:
    return 404, {"message": "Not Found"}


def access_token(state: FakeGitHub, request: Request) -> Answer:
    if int(request.match["id"]) != INSTALLATION_ID:
        return _not_found()
    token = "ghs_" + secrets.token_hex(16)
    expires = datetime.now(UTC) + state.token_lifetime
    state.tokens[token] = expires
    return 201, {
        "token": token,
        "expires_at": timestamp(expires),
        "permissions": {
            "metadata": "read",
            "pull_requests": "write",
            "contents": "write",
            "statuses": "write",
        },
        "repository_selection": "all",
    }


def get_repo(state: FakeGitHub, request: Request) -> Answer:
    repo = _repo(state, request)
    return (200, repo.json(state.url)) if repo else _not_found()


def list_pulls(state: FakeGitHub, request: Request) -> Answer:
    repo = _repo(state, request)
    if repo is None:
        return _not_found()
    wanted = request.query.get("state", "open")
    head, base = request.query.get("head"), request.query.get("base")
    pulls = [repo.refresh(n) for n in sorted(repo.pulls)]
    pulls = [
        p
        for p in pulls
        if wanted in ("all", p["state"])
        and (head is None or p["head"]["label"] == head)
        and (base is None or p["base"]["ref"] == base)
    ]
    return 200, [state.pull_json(repo, p, simple=True) for p in pulls]


def create_pull(state: FakeGitHub, request: Request) -> Answer:
    repo = _repo(state, request)
    body = request.body or {}
    if repo is None:
        return _not_found()
    if cross_repository(repo, body):  # ``owner:branch`` of another repository: forks
        return create_cross_pull(state, request, repo)
    head = str(body.get("head", "")).split(":")[-1]
    missing = [k for k in ("title", "head", "base") if not body.get(k)]
    if missing:
        return 422, {"message": "Validation Failed", "errors": [{"field": m} for m in missing]}
    try:
        repo.sha(f"refs/heads/{head}")
    except RuntimeError:
        return 422, {
            "message": "Validation Failed",
            "errors": [{"field": "head", "code": "invalid"}],
        }
    for pull in repo.pulls.values():
        if pull["state"] == "open" and pull["head"]["ref"] == head:
            message = f"A pull request already exists for {pull['head']['label']}."
            return 422, {"message": "Validation Failed", "errors": [{"message": message}]}
    number = repo.add_pull(
        state.next_id(), head, body["base"], body["title"], body.get("body") or "", request.login
    )
    return 201, state.pull_json(repo, repo.pulls[number])


def get_pull(state: FakeGitHub, request: Request) -> Answer:
    repo = _repo(state, request)
    number = int(request.match["number"])
    if repo is None or number not in repo.pulls:
        return _not_found()
    return 200, state.pull_json(repo, repo.refresh(number))


def edit_pull(state: FakeGitHub, request: Request) -> Answer:
    repo = _repo(state, request)
    number = int(request.match["number"])
    if repo is None or number not in repo.pulls:
        return _not_found()
    pull = repo.refresh(number)
    body = request.body or {}
    for key in ("title", "body"):
        if key in body:
            pull[key] = body[key]
    if body.get("state") in ("open", "closed"):
        pull["state"] = body["state"]
        pull["closed_at"] = None if body["state"] == "open" else timestamp()
    pull["updated_at"] = timestamp()
    return 200, state.pull_json(repo, pull)


def pull_files(state: FakeGitHub, request: Request) -> Answer:
    repo = _repo(state, request)
    number = int(request.match["number"])
    if repo is None or number not in repo.pulls:
        return _not_found()
    return 200, repo.files(number)


def list_comments(state: FakeGitHub, request: Request) -> Answer:
    repo = _repo(state, request)
    number = int(request.match["number"])
    if repo is None or number not in repo.comments:
        return _not_found()
    return 200, list(repo.comments[number])


def create_comment(state: FakeGitHub, request: Request) -> Answer:
    repo = _repo(state, request)
    number = int(request.match["number"])
    body = (request.body or {}).get("body")
    if repo is None or number not in repo.comments:
        return _not_found()
    if not isinstance(body, str) or not body:
        return 422, {"message": "Validation Failed", "errors": [{"field": "body"}]}
    if len(body) > 65536:
        return 422, {"message": "Validation Failed: body is too long (maximum is 65536 characters)"}
    return 201, repo.add_comment(state.next_id(), number, body, request.login, "Bot", state.url)


def get_comment(state: FakeGitHub, request: Request) -> Answer:
    repo = _repo(state, request)
    comment = repo.find_comment(int(request.match["id"])) if repo else None
    return (200, comment) if comment else _not_found()


def edit_comment(state: FakeGitHub, request: Request) -> Answer:
    repo = _repo(state, request)
    comment = repo.find_comment(int(request.match["id"])) if repo else None
    body = (request.body or {}).get("body")
    if comment is None:
        return _not_found()
    if not isinstance(body, str) or not body:
        return 422, {"message": "Validation Failed", "errors": [{"field": "body"}]}
    if len(body) > 65536:
        return 422, {"message": "Validation Failed: body is too long (maximum is 65536 characters)"}
    comment["body"], comment["updated_at"] = body, timestamp()
    return 200, comment


def create_reaction(state: FakeGitHub, request: Request) -> Answer:
    repo = _repo(state, request)
    comment_id = int(request.match["id"])
    content = (request.body or {}).get("content")
    if repo is None or repo.find_comment(comment_id) is None:
        return _not_found()
    if content not in REACTIONS:
        return 422, {"message": "Validation Failed", "errors": [{"field": "content"}]}
    for reaction in repo.reactions:
        if reaction["comment_id"] == comment_id and reaction["content"] == content:
            return 200, {k: v for k, v in reaction.items() if k != "comment_id"}
    reaction_id = state.next_id()
    reaction = {
        "id": reaction_id,
        "node_id": node_id("Reaction", reaction_id),
        "user": user(request.login, "Bot", state.url),
        "content": content,
        "created_at": timestamp(),
        "comment_id": comment_id,
    }
    repo.reactions.append(reaction)
    comment = repo.find_comment(comment_id)
    assert comment is not None  # checked above
    comment["reactions"] = reaction_rollup(
        comment["reactions"]["url"],
        [r["content"] for r in repo.reactions if r["comment_id"] == comment_id],
    )
    return 201, {k: v for k, v in reaction.items() if k != "comment_id"}


def create_status(state: FakeGitHub, request: Request) -> Answer:
    repo = _repo(state, request)
    body = request.body or {}
    if repo is None:
        return _not_found()
    if body.get("state") not in ("pending", "success", "failure", "error"):
        return 422, {"message": "Validation Failed", "errors": [{"field": "state"}]}
    if len(body.get("description") or "") > 140:
        return 422, {"message": "Validation Failed: description is too long (maximum is 140)"}
    status_id, sha, creator = (
        state.next_id(),
        request.match["sha"],
        user(request.login, "Bot", state.url),
    )
    status = {
        "url": f"{state.url}/repos/{repo.full_name}/statuses/{sha}",
        "avatar_url": creator["avatar_url"],
        "id": status_id,
        "node_id": node_id("StatusContext", status_id),
        "state": body["state"],
        "description": body.get("description"),
        "target_url": body.get("target_url"),
        "context": body.get("context") or "default",
        "created_at": timestamp(),
        "updated_at": timestamp(),
        "creator": creator,
        "sha": sha,
    }
    repo.statuses.append(status)
    return 201, {k: v for k, v in status.items() if k != "sha"}


def list_statuses(state: FakeGitHub, request: Request) -> Answer:
    """The statuses of a commit, newest first, as GitHub lists them."""
    repo = _repo(state, request)
    if repo is None:
        return _not_found()
    sha = request.match["sha"]
    made = [s for s in repo.statuses if s["sha"] == sha]
    return 200, [{k: v for k, v in s.items() if k != "sha"} for s in reversed(made)]


def get_commit(state: FakeGitHub, request: Request) -> Answer:
    repo = _repo(state, request)
    if repo is None:
        return _not_found()
    try:
        sha = repo.sha(request.match["sha"])
    except RuntimeError:
        return 422, {"message": f"No commit found for SHA: {request.match['sha']}"}
    return 200, repo.commit_json(sha)


def permission(state: FakeGitHub, request: Request) -> Answer:
    repo = _repo(state, request)
    if repo is None:
        return _not_found()
    login = request.match["user"]
    if login.startswith("ghost-"):
        return 404, {"message": "Not Found"}
    level = repo.permissions.get(login, "none")  # any existing user; "none" when not a collaborator
    return 200, {
        "permission": level,
        "role_name": level,
        "user": collaborator(login, level, state.url),
    }


def _route(method: str, pattern: str, handler: Handler, schema: str | None) -> Route:
    """One endpoint: its method, path pattern, handler and the REST schema of its 2xx answer.

    ``schema`` names a component of GitHub's REST description (``pull-request``, ``status``...);
    the server validates every 2xx JSON answer against it.  ``None`` only for answers that are
    not JSON (raw logs, redirects), with a comment at the route saying so.
    """
    return method, re.compile(pattern), handler, schema


ROUTES: list[Route] = [
    _route(
        "POST", r"/app/installations/(?P<id>\d+)/access_tokens", access_token, "installation-token"
    ),
    _route("GET", REPO, get_repo, "full-repository"),
    _route("GET", REPO + r"/pulls", list_pulls, "pull-request-simple"),
    _route("POST", REPO + r"/pulls", create_pull, "pull-request"),
    _route("GET", REPO + r"/pulls/(?P<number>\d+)", get_pull, "pull-request"),
    _route("PATCH", REPO + r"/pulls/(?P<number>\d+)", edit_pull, "pull-request"),
    _route("GET", REPO + r"/pulls/(?P<number>\d+)/files", pull_files, "diff-entry"),
    _route("GET", REPO + r"/issues/(?P<number>\d+)/comments", list_comments, "issue-comment"),
    _route("POST", REPO + r"/issues/(?P<number>\d+)/comments", create_comment, "issue-comment"),
    _route("GET", REPO + r"/issues/comments/(?P<id>\d+)", get_comment, "issue-comment"),
    _route("PATCH", REPO + r"/issues/comments/(?P<id>\d+)", edit_comment, "issue-comment"),
    _route("POST", REPO + r"/issues/comments/(?P<id>\d+)/reactions", create_reaction, "reaction"),
    _route("POST", REPO + r"/statuses/(?P<sha>[0-9a-f]{7,40})", create_status, "status"),
    # PyGithub's ``Commit.get_statuses`` asks GitHub's older path, which GitHub still answers.
    _route("GET", REPO + r"/statuses/(?P<sha>[0-9a-f]{7,40})", list_statuses, "status"),
    _route("GET", REPO + r"/commits/(?P<sha>[0-9a-f]{7,40})/statuses", list_statuses, "status"),
    _route("GET", REPO + r"/commits/(?P<sha>[^/]+)", get_commit, "commit"),
    _route(
        "GET",
        REPO + r"/collaborators/(?P<user>[^/]+)/permission",
        permission,
        "repository-collaborator-permission",
    ),
    _route("GET", REPO + r"/actions/jobs/(?P<id>\d+)", get_job, "job"),
    # A 302 redirect to the log blob, no JSON body (GitHub answers the same way).
    _route("GET", REPO + r"/actions/jobs/(?P<id>\d+)/logs", job_logs, None),
    # The log blob itself is plain text, not a REST resource.
    _route("GET", r"/_blobs/job-logs/(?P<id>\d+)", job_log_blob, None),
]
# Pull request reviews and their line comments (tests/fakes/github_reviews.py).
ROUTES += REVIEW_ROUTES
