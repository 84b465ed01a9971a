"""Pull request reviews on the GitHub double: reviews and their line comments.

``POST .../pulls/{n}/reviews`` checks what GitHub checks: ``event``, ``commit_id`` (a commit of
the PR), and that every comment's lines are in the PR's diff at that commit (``git diff`` from
the base with three lines of context; otherwise 422 with GitHub's words, and nothing is created,
as on GitHub a review is all or nothing). Reviews live on their ``FakeRepo`` (``reviews_of``);
``FakeRepo`` itself belongs to ``github_git.py``, so the store is attached here. Applying the
suggestions of a review: ``tests/fakes/github_suggestions.py``.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.fakes.github_git import FakeRepo, git_out
from tests.fakes.github_shapes import WEB, node_id, timestamp

if TYPE_CHECKING:
    from tests.fakes.github_api import FakeGitHub, Request

Answer = tuple[int, Any]
DOCS = "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request"
EVENTS = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}
BODY_MAX = 65536
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Reviews:
    """One repository's reviews (by PR number) and review comments (by review id)."""

    by_pull: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    def find(self, review_id: int) -> tuple[int, dict[str, Any]] | None:
        """``(pr number, review)`` of a review id."""
        for number, reviews in self.by_pull.items():
            for review in reviews:
                if review["id"] == review_id:
                    return number, review
        return None

    def comment(self, comment_id: int) -> dict[str, Any] | None:
        """A review comment by id, on any PR."""
        for comments in self.comments.values():
            for comment in comments:
                if comment["id"] == comment_id:
                    return comment
        return None


def store(repo: FakeRepo) -> Reviews:
    """The reviews of ``repo`` (created on first use)."""
    found = repo.__dict__.get("_reviews")
    if found is None:
        found = repo.__dict__["_reviews"] = Reviews()
    return found


def add_review(
    state: FakeGitHub, full_name: str, number: int, login: str, body: str, sha: str
) -> dict[str, Any]:
    """A submitted ``COMMENT`` review by ``login`` (anyone may review a public PR)."""
    repo = state.repos[full_name]
    with state.lock:
        review = _review_json(state, repo, number, login, body, "COMMENT", sha)
        store(repo).by_pull.setdefault(number, []).append(review)
        store(repo).comments[review["id"]] = []
    return review


def reviews_of(state: FakeGitHub, full_name: str, number: int) -> list[dict[str, Any]]:
    """The reviews of PR ``number`` as the API shows them, oldest first."""
    return list(store(state.repos[full_name]).by_pull.get(number, []))


def comments_of(state: FakeGitHub, full_name: str, review_id: int) -> list[dict[str, Any]]:
    """The comments of one review as the API shows them."""
    return list(store(state.repos[full_name]).comments.get(review_id, []))


# ----- the PR's diff, as review comments see it ---------------------------------------------
@dataclass
class DiffLine:
    """One line of a file's diff: its text, its line on each side, and its hunk."""

    text: str
    left: int | None
    right: int | None
    hunk: int


def file_diffs(repo: FakeRepo, base: str, commit: str) -> dict[str, list[DiffLine]]:
    """Each changed file's diff lines from its first ``@@`` header on (the header is line 0, so
    a line's index is GitHub's ``position``)."""
    out = subprocess.run(
        [
            "git",
            "-C",
            str(repo.path),
            "diff",
            "--no-renames",
            "--no-color",
            "-U3",
            f"{base}...{commit}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    files: dict[str, list[DiffLine]] = {}
    current: list[DiffLine] | None = None
    left = right = hunk = 0
    for text in out.split("\n"):
        if text.startswith("diff --git "):
            current = None
        elif text.startswith("+++ "):
            current = (
                files.setdefault(text[4:].removeprefix("b/"), [])
                if text[4:] != "/dev/null"
                else None
            )
        elif current is not None and (header := _HUNK.match(text)):
            left, right, hunk = int(header[1]), int(header[3]), hunk + 1
            current.append(DiffLine(text, None, None, hunk))
        elif current is not None and text[:1] in (" ", "-", "+", "\\"):
            old = left if text[:1] in (" ", "-") else None
            new = right if text[:1] in (" ", "+") else None
            current.append(DiffLine(text, old, new, hunk))
            left += old is not None
            right += new is not None
    return files


def _sentence(messages: list[str]) -> str:
    # How GitHub (Rails' to_sentence) joins several validation messages into one.
    if len(messages) < 3:
        return " and ".join(messages)
    return ", ".join(messages[:-1]) + ", and " + messages[-1]


def _locate(lines: list[DiffLine], line: int, side: str) -> int | None:
    for index, entry in enumerate(lines):
        if (entry.right if side == "RIGHT" else entry.left) == line:
            return index
    return None


def _thread_errors(diffs: dict[str, list[DiffLine]], comment: dict[str, Any]) -> list[str]:
    """GitHub's complaints about one review comment's place in the diff."""
    lines = diffs.get(str(comment.get("path")))
    if lines is None:
        return [
            "Pull request review thread path is invalid",
            "Pull request review thread diff hunk can't be blank",
        ]
    side = comment.get("side") or "RIGHT"
    at = (
        _locate(lines, comment.get("line") or 0, side)
        if isinstance(comment.get("line"), int)
        else None
    )
    if at is None:
        return [
            "Pull request review thread line must be part of the diff",
            "Pull request review thread diff hunk can't be blank",
        ]
    if comment.get("start_line") is None:
        return []
    start = _locate(lines, comment["start_line"], comment.get("start_side") or side)
    if start is None or lines[start].hunk != lines[at].hunk:
        return ["Pull request review thread start line must be part of the same hunk as the line."]
    if start >= at:
        return ["Pull request review thread start line must precede the end line."]
    return []


def _hunk_text(lines: list[DiffLine], at: int) -> str:
    first = max(
        i
        for i in range(at + 1)
        if lines[i].text.startswith("@@") and lines[i].hunk == lines[at].hunk
    )
    return "\n".join(entry.text for entry in lines[first : at + 1])


# ----- JSON ---------------------------------------------------------------------------------
def _pull_url(repo: FakeRepo, number: int) -> str:
    return f"{repo.api_url}/repos/{repo.full_name}/pulls/{number}"


def _review_json(
    state: FakeGitHub,
    repo: FakeRepo,
    number: int,
    login: str,
    body: str,
    event: str | None,
    sha: str,
) -> dict[str, Any]:
    review_id = state.next_id()
    html = f"{WEB}/{repo.full_name}/pull/{number}#pullrequestreview-{review_id}"
    review: dict[str, Any] = {
        "id": review_id,
        "node_id": node_id("PullRequestReview", review_id),
        "user": repo.user(login),
        "body": body,
        "state": EVENTS.get(event or "", "PENDING"),
        "html_url": html,
        "pull_request_url": _pull_url(repo, number),
        "author_association": repo.association(login),
        "_links": {"html": {"href": html}, "pull_request": {"href": _pull_url(repo, number)}},
        "commit_id": sha,
    }
    if event:
        review["submitted_at"] = timestamp()
    return review


def _comment_json(
    state: FakeGitHub,
    repo: FakeRepo,
    number: int,
    review: dict[str, Any],
    given: dict[str, Any],
    lines: list[DiffLine],
) -> dict[str, Any]:
    comment_id = state.next_id()
    side = given.get("side") or "RIGHT"
    at = _locate(lines, given["line"], side)
    assert at is not None  # checked before anything was created
    url = f"{repo.api_url}/repos/{repo.full_name}/pulls/comments/{comment_id}"
    html = f"{WEB}/{repo.full_name}/pull/{number}#discussion_r{comment_id}"
    start = given.get("start_line")
    now = timestamp()
    return {
        "url": url,
        "pull_request_review_id": review["id"],
        "id": comment_id,
        "node_id": node_id("PullRequestReviewComment", comment_id),
        "diff_hunk": _hunk_text(lines, at),
        "path": given["path"],
        "position": at,
        "original_position": at,
        "commit_id": review["commit_id"],
        "original_commit_id": review["commit_id"],
        "user": review["user"],
        "body": given["body"],
        "created_at": now,
        "updated_at": now,
        "html_url": html,
        "pull_request_url": _pull_url(repo, number),
        "author_association": review["author_association"],
        "_links": {
            "self": {"href": url},
            "html": {"href": html},
            "pull_request": {"href": _pull_url(repo, number)},
        },
        "start_line": start,
        "original_start_line": start,
        "start_side": (given.get("start_side") or side) if start is not None else None,
        "line": given["line"],
        "original_line": given["line"],
        "side": side,
        "subject_type": "line",
    }


# ----- routes -------------------------------------------------------------------------------
def _pull(state: FakeGitHub, request: Request) -> tuple[FakeRepo, int] | None:
    repo = state.repos.get(f"{request.match['owner']}/{request.match['name']}")
    number = int(request.match["number"]) if "number" in request.match.groupdict() else 0
    if repo is None or (number and number not in repo.pulls):
        return None
    return repo, number


def _invalid(*errors: str) -> Answer:
    return 422, {
        "message": "Unprocessable Entity",
        "errors": [_sentence(list(errors))],
        "documentation_url": DOCS,
        "status": "422",
    }


def _commit_of(repo: FakeRepo, pull: dict[str, Any], given: Any) -> str | None:
    """The PR commit a review is made on (default: the head); None when it is not one."""
    head = str(pull["head"]["sha"])
    if given is None:
        return head
    try:
        sha = repo.sha(str(given))
        git_out(repo.path, "merge-base", "--is-ancestor", sha, head)
    except RuntimeError:
        return None
    return sha


def create_review(state: FakeGitHub, request: Request) -> Answer:
    found = _pull(state, request)
    if found is None:
        return 404, {"message": "Not Found"}
    repo, number = found
    body, pull = request.body or {}, repo.refresh(number)
    event, text, comments = body.get("event"), body.get("body") or "", body.get("comments") or []
    if event is not None and event not in EVENTS:
        return _invalid(f"Unknown review event {event!r}: use APPROVE, REQUEST_CHANGES or COMMENT")
    if event in ("REQUEST_CHANGES", "COMMENT") and not text:
        return _invalid(f"Review body is required when the event is {event}")
    if len(text) > BODY_MAX or any(len(str(c.get("body") or "")) > BODY_MAX for c in comments):
        return _invalid(f"Body is too long (maximum is {BODY_MAX} characters)")
    sha = _commit_of(repo, pull, body.get("commit_id"))
    if sha is None:
        return _invalid(f"No commit found for SHA: {body.get('commit_id')} in this pull request")
    reviews = store(repo)
    mine = reviews.by_pull.setdefault(number, [])
    if event is None and any(
        r["state"] == "PENDING" and r["user"]["login"] == request.login for r in mine
    ):
        return _invalid("User can only have one pending review per pull request")
    diffs = file_diffs(repo, pull["base"]["sha"], sha)
    errors = list(dict.fromkeys(e for c in comments for e in _thread_errors(diffs, c)))
    if errors:
        return _invalid(*errors)
    review = _review_json(state, repo, number, request.login, text, event, sha)
    mine.append(review)
    reviews.comments[review["id"]] = [
        _comment_json(state, repo, number, review, c, diffs[c["path"]]) for c in comments
    ]
    return 200, review


def list_reviews(state: FakeGitHub, request: Request) -> Answer:
    found = _pull(state, request)
    if found is None:
        return 404, {"message": "Not Found"}
    repo, number = found
    return 200, list(store(repo).by_pull.get(number, []))


def _review(state: FakeGitHub, request: Request) -> tuple[FakeRepo, dict[str, Any]] | None:
    found = _pull(state, request)
    if found is None:
        return None
    repo, number = found
    located = store(repo).find(int(request.match["id"]))
    return (repo, located[1]) if located is not None and located[0] == number else None


def get_review(state: FakeGitHub, request: Request) -> Answer:
    found = _review(state, request)
    return (200, found[1]) if found else (404, {"message": "Not Found"})


def update_review(state: FakeGitHub, request: Request) -> Answer:
    found = _review(state, request)
    if found is None:
        return 404, {"message": "Not Found"}
    _repo, review = found
    text = (request.body or {}).get("body")
    if review["user"]["login"] != request.login:
        return 403, {"message": "Resource not accessible by integration"}
    if not isinstance(text, str) or not text:
        return 422, {
            "message": "Validation Failed",
            "errors": [{"resource": "PullRequestReview", "field": "body", "code": "missing_field"}],
        }
    if len(text) > BODY_MAX:
        return _invalid(f"Body is too long (maximum is {BODY_MAX} characters)")
    review["body"] = text
    return 200, review


def review_comments(state: FakeGitHub, request: Request) -> Answer:
    found = _review(state, request)
    if found is None:
        return 404, {"message": "Not Found"}
    repo, review = found
    return 200, list(store(repo).comments.get(review["id"], []))


def pull_comments(state: FakeGitHub, request: Request) -> Answer:
    found = _pull(state, request)
    if found is None:
        return 404, {"message": "Not Found"}
    repo, number = found
    reviews = store(repo)
    ids = {r["id"] for r in reviews.by_pull.get(number, [])}
    every = [c for rid in sorted(ids) for c in reviews.comments.get(rid, [])]
    return 200, sorted(every, key=lambda c: c["id"])


def edit_review_comment(state: FakeGitHub, request: Request) -> Answer:
    found = _pull(state, request)
    comment = store(found[0]).comment(int(request.match["id"])) if found else None
    if comment is None:
        return 404, {"message": "Not Found"}
    text = (request.body or {}).get("body")
    if comment["user"]["login"] != request.login:
        return 403, {"message": "Resource not accessible by integration"}
    if not isinstance(text, str) or not text or len(text) > BODY_MAX:
        return 422, {
            "message": "Validation Failed",
            "errors": [
                {"resource": "PullRequestReviewComment", "field": "body", "code": "invalid"}
            ],
        }
    comment["body"], comment["updated_at"] = text, timestamp()
    return 200, comment


_PULL = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)/pulls/(?P<number>\d+)"
REVIEW_ROUTES = [
    ("POST", re.compile(_PULL + r"/reviews"), create_review, "pull-request-review"),
    ("GET", re.compile(_PULL + r"/reviews"), list_reviews, "pull-request-review"),
    ("GET", re.compile(_PULL + r"/reviews/(?P<id>\d+)"), get_review, "pull-request-review"),
    ("PUT", re.compile(_PULL + r"/reviews/(?P<id>\d+)"), update_review, "pull-request-review"),
    (
        "GET",
        re.compile(_PULL + r"/reviews/(?P<id>\d+)/comments"),
        review_comments,
        "review-comment",
    ),
    ("GET", re.compile(_PULL + r"/comments"), pull_comments, "pull-request-review-comment"),
    (
        "PATCH",
        re.compile(r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)/pulls/comments/(?P<id>\d+)"),
        edit_review_comment,
        "pull-request-review-comment",
    ),
]
