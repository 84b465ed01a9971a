"""The webhook payloads the GitHub double builds, in the shapes of GitHub's webhook schemas.

Each builder checks its payload against the description's webhook schema
(``webhook-pull-request-opened``, ``webhook-issue-comment-created``...) and records what is off
in ``FakeGitHub.schema_errors``, so a test that delivers it fails at teardown as for a REST answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.fakes.github_shapes import WEB, node_id, reaction_rollup, user

if TYPE_CHECKING:
    from tests.fakes.github_api import FakeGitHub


def checked(state: FakeGitHub, event: str, payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` of the ``event`` webhook, its problems recorded against its action's schema."""
    action = str(payload.get("action", ""))
    schema = f"webhook-{event}-{action}".replace("_", "-")
    state.check_schema(f"webhook {event}.{action}", schema, 200, payload)
    return payload


def pull_request_event(
    state: FakeGitHub, full_name: str, number: int, action: str, *, sender: str = "maintainer"
) -> dict[str, Any]:
    """The ``pull_request`` webhook payload GitHub would send now."""
    repo = state.repos[full_name]
    pull = repo.refresh(number)
    payload: dict[str, Any] = {
        "action": action,
        "number": number,
        "pull_request": state.pull_json(repo, pull),
        "repository": repo.json(state.url, full=False),
        "sender": user(sender, api_url=state.url),
    }
    if action == "synchronize":
        payload.update(before=pull.get("_before", pull["base"]["sha"]), after=pull["head"]["sha"])
    if action == "edited":
        payload["changes"] = {}
    return checked(state, "pull_request", payload)


def comment_event(
    state: FakeGitHub,
    full_name: str,
    number: int,
    comment: dict[str, Any],
) -> dict[str, Any]:
    """The ``issue_comment`` ``created`` payload GitHub sends for ``comment`` on PR ``number``."""
    repo = state.repos[full_name]
    pull = repo.pulls.get(number)
    return checked(
        state,
        "issue_comment",
        {
            "action": "created",
            "issue": issue(state, full_name, number, pull),
            "comment": comment,
            "repository": repo.json(state.url, full=False),
            "sender": comment["user"],
        },
    )


def issue(
    state: FakeGitHub, full_name: str, number: int, pull: dict[str, Any] | None
) -> dict[str, Any]:
    """The issue a PR is (GitHub's ``issue`` of an ``issue_comment`` payload)."""
    repo = state.repos[full_name]
    api = f"{state.url}/repos/{full_name}"
    title = pull["title"] if pull else ""
    author = pull["user"] if pull else user(repo.owner, api_url=state.url)
    shape: dict[str, Any] = {
        "url": f"{api}/issues/{number}",
        "repository_url": api,
        "labels_url": f"{api}/issues/{number}/labels{{/name}}",
        "comments_url": f"{api}/issues/{number}/comments",
        "events_url": f"{api}/issues/{number}/events",
        "html_url": f"{WEB}/{full_name}/{'pull' if pull else 'issues'}/{number}",
        "id": number + 7_000_000,
        "node_id": node_id("Issue", number + 7_000_000),
        "number": number,
        "title": title,
        "user": author,
        "labels": [],
        "state": pull["state"] if pull else "open",
        "locked": False,
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "comments": len(repo.comments.get(number, [])),
        "created_at": pull["created_at"] if pull else repo.comments[number][0]["created_at"],
        "updated_at": pull["updated_at"] if pull else repo.comments[number][-1]["updated_at"],
        "closed_at": pull["closed_at"] if pull else None,
        "author_association": repo.association(author["login"]),
        "active_lock_reason": None,
        "body": pull["body"] if pull else None,
        "reactions": reaction_rollup(f"{api}/issues/{number}/reactions", []),
        "timeline_url": f"{api}/issues/{number}/timeline",
    }
    if pull is not None:
        shape["draft"] = pull.get("draft", False)
        shape["pull_request"] = {
            "url": f"{api}/pulls/{number}",
            "html_url": f"{WEB}/{full_name}/pull/{number}",
            "diff_url": f"{WEB}/{full_name}/pull/{number}.diff",
            "patch_url": f"{WEB}/{full_name}/pull/{number}.patch",
            "merged_at": pull.get("merged_at"),
        }
    return shape
