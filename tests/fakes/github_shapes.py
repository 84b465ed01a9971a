"""The REST API's objects as GitHub serves them (version 2022-11-28), built for the GitHub double.

Every field here is one GitHub's REST description has (``tests/fakes/github_schema.py`` checks
each answer); values take GitHub's formats: timestamps ``2026-07-30T10:55:00Z``, legacy global
``node_id``s (base64 of ``04:User42``), API URLs under the double, web URLs on github.com.
"""

from __future__ import annotations

import base64
import zlib
from datetime import UTC, datetime
from typing import Any

WEB = "https://github.com"
PUBLIC_API = "https://api.github.com"
# When the double's repositories were "created" on GitHub: a fixed, plausible past moment.
CREATED = "2024-01-15T09:30:00Z"
# GitHub calls anyone invited to the repository a collaborator, whatever their permission.
ASSOCIATION = {role: "COLLABORATOR" for role in ("admin", "maintain", "write", "triage", "read")}
REACTIONS = ("+1", "-1", "laugh", "hooray", "confused", "heart", "rocket", "eyes")


def timestamp(moment: datetime | None = None) -> str:
    """``moment`` (default: now) as GitHub writes times: UTC, seconds, ``Z``."""
    return (moment or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stable_id(text: str, *, modulo: int = 10**8) -> int:
    """A positive id derived from ``text``, the same in every run (unlike ``hash``)."""
    return zlib.crc32(text.encode()) % modulo + 1


def node_id(kind: str, number: int) -> str:
    """A legacy GraphQL global id, as the REST API still serves them: ``MDQ6VXNlcjE=``."""
    return base64.b64encode(f"{len(kind):02d}:{kind}{number}".encode()).decode()


def user(login: str, user_type: str = "User", api_url: str = PUBLIC_API) -> dict[str, Any]:
    """A user as the REST API nests it (``simple-user``)."""
    number = stable_id(login, modulo=10**7)
    url = f"{api_url}/users/{login}"
    return {
        "login": login,
        "id": number,
        "node_id": node_id("Bot" if user_type == "Bot" else "User", number),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{number}?v=4",
        "gravatar_id": "",
        "url": url,
        "html_url": f"{WEB}/{login.removesuffix('[bot]')}",
        "followers_url": f"{url}/followers",
        "following_url": f"{url}/following{{/other_user}}",
        "gists_url": f"{url}/gists{{/gist_id}}",
        "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{url}/subscriptions",
        "organizations_url": f"{url}/orgs",
        "repos_url": f"{url}/repos",
        "events_url": f"{url}/events{{/privacy}}",
        "received_events_url": f"{url}/received_events",
        "type": user_type,
        "site_admin": False,
    }


def collaborator(login: str, role: str, api_url: str) -> dict[str, Any]:
    """A user with their role on a repository (``collaborator``)."""
    return {**user(login, api_url=api_url), "role_name": role}


def association(owner: str, permissions: dict[str, str], login: str) -> str:
    """``author_association`` of ``login`` on a repository of ``owner``."""
    if login == owner:
        return "OWNER"
    return ASSOCIATION.get(permissions.get(login, "none"), "NONE")


def repository(
    full_name: str, default_branch: str, api_url: str, *, full: bool = True
) -> dict[str, Any]:
    """A repository: ``full-repository`` (``GET /repos/...``) or, nested, ``repository``."""
    owner, name = full_name.split("/", 1)
    number = stable_id(full_name)
    url = f"{api_url}/repos/{full_name}"
    urls = {f"{key}_url": f"{url}/{path}" for key, path in _REPO_PATHS.items()}
    shape: dict[str, Any] = {
        "id": number,
        "node_id": node_id("Repository", number),
        "name": name,
        "full_name": full_name,
        "owner": user(owner, "Organization", api_url),
        "private": False,
        "html_url": f"{WEB}/{full_name}",
        "description": None,
        "fork": False,
        "url": url,
        **urls,
        "git_url": f"git://github.com/{full_name}.git",
        "ssh_url": f"git@github.com:{full_name}.git",
        "clone_url": f"{WEB}/{full_name}.git",
        "svn_url": f"{WEB}/{full_name}",
        "mirror_url": None,
        "homepage": None,
        "language": "Python",
        "forks_count": 0,
        "forks": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "watchers": 0,
        "size": 128,
        "default_branch": default_branch,
        "open_issues_count": 0,
        "open_issues": 0,
        "is_template": False,
        "topics": [],
        "has_issues": True,
        "has_projects": True,
        "has_wiki": False,
        "has_pages": False,
        "has_downloads": True,
        "has_discussions": False,
        "archived": False,
        "disabled": False,
        "visibility": "public",
        "license": None,
        "allow_forking": True,
        "web_commit_signoff_required": False,
        "pushed_at": timestamp(),
        "created_at": CREATED,
        "updated_at": timestamp(),
    }
    if full:
        shape.update(subscribers_count=0, network_count=0, organization=shape["owner"])
    return shape


# The ``*_url`` templates of a repository, relative to its API URL.
_REPO_PATHS = {
    "archive": "{archive_format}{/ref}",
    "assignees": "assignees{/user}",
    "blobs": "git/blobs{/sha}",
    "branches": "branches{/branch}",
    "collaborators": "collaborators{/collaborator}",
    "comments": "comments{/number}",
    "commits": "commits{/sha}",
    "compare": "compare/{base}...{head}",
    "contents": "contents/{+path}",
    "contributors": "contributors",
    "deployments": "deployments",
    "downloads": "downloads",
    "events": "events",
    "forks": "forks",
    "git_commits": "git/commits{/sha}",
    "git_refs": "git/refs{/sha}",
    "git_tags": "git/tags{/sha}",
    "hooks": "hooks",
    "issue_comment": "issues/comments{/number}",
    "issue_events": "issues/events{/number}",
    "issues": "issues{/number}",
    "keys": "keys{/key_id}",
    "labels": "labels{/name}",
    "languages": "languages",
    "merges": "merges",
    "milestones": "milestones{/number}",
    "notifications": "notifications{?since,all,participating}",
    "pulls": "pulls{/number}",
    "releases": "releases{/id}",
    "stargazers": "stargazers",
    "statuses": "statuses/{sha}",
    "subscribers": "subscribers",
    "subscription": "subscription",
    "tags": "tags",
    "teams": "teams",
    "trees": "git/trees{/sha}",
}


def reaction_rollup(url: str, contents: list[str]) -> dict[str, Any]:
    """The ``reactions`` summary of a comment or issue: a count per reaction."""
    return {
        "url": url,
        "total_count": len(contents),
        **{name: contents.count(name) for name in REACTIONS},
    }


def pull_links(full_name: str, number: int, head_sha: str, api_url: str) -> dict[str, Any]:
    """The ``_links`` of a pull request."""
    base = f"{api_url}/repos/{full_name}"
    hrefs = {
        "self": f"{base}/pulls/{number}",
        "html": f"{WEB}/{full_name}/pull/{number}",
        "issue": f"{base}/issues/{number}",
        "comments": f"{base}/issues/{number}/comments",
        "review_comments": f"{base}/pulls/{number}/comments",
        "review_comment": f"{base}/pulls/comments{{/number}}",
        "commits": f"{base}/pulls/{number}/commits",
        "statuses": f"{base}/statuses/{head_sha}",
    }
    return {key: {"href": href} for key, href in hrefs.items()}


# A pull request's fields that ``pull-request-simple`` (the list endpoint) does not have.
_FULL_PULL_ONLY = (
    "merged",
    "mergeable",
    "rebaseable",
    "mergeable_state",
    "merged_by",
    "comments",
    "review_comments",
    "maintainer_can_modify",
    "commits",
    "additions",
    "deletions",
    "changed_files",
)
# Keys of the double's stored pull dict that are bookkeeping, not API fields.
_PULL_BOOKKEEPING = ("head_repo",)


def pull_request(
    stored: dict[str, Any],
    *,
    full_name: str,
    head_repo: dict[str, Any] | None,
    base_repo: dict[str, Any],
    api_url: str,
    author_association: str,
    stats: dict[str, int] | None,
) -> dict[str, Any]:
    """A pull request: ``pull-request``, or ``pull-request-simple`` when ``stats`` is None.

    ``stored`` is the double's record (number, state, title, body, user, head/base ref, sha and
    label, times, merge fields); ``stats`` holds the counts only the full shape carries
    (comments, review_comments, commits, additions, deletions, changed_files).
    """
    number = stored["number"]
    pull_id = number + 5_000_000
    base = f"{api_url}/repos/{full_name}"
    is_open = stored["state"] == "open"
    served = {
        key: value
        for key, value in stored.items()
        if not key.startswith("_") and key not in _PULL_BOOKKEEPING
    }
    shape: dict[str, Any] = {
        "locked": False,
        "labels": [],
        "milestone": None,
        "active_lock_reason": None,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "auto_merge": None,
        "draft": False,
        "merged_by": None,
        "maintainer_can_modify": False,
        **served,
        "id": pull_id,
        "node_id": node_id("PullRequest", pull_id),
        "url": f"{base}/pulls/{number}",
        "html_url": f"{WEB}/{full_name}/pull/{number}",
        "diff_url": f"{WEB}/{full_name}/pull/{number}.diff",
        "patch_url": f"{WEB}/{full_name}/pull/{number}.patch",
        "issue_url": f"{base}/issues/{number}",
        "commits_url": f"{base}/pulls/{number}/commits",
        "review_comments_url": f"{base}/pulls/{number}/comments",
        "review_comment_url": f"{base}/pulls/comments{{/number}}",
        "comments_url": f"{base}/issues/{number}/comments",
        "statuses_url": f"{base}/statuses/{stored['head']['sha']}",
        "head": _pull_end(stored["head"], head_repo),
        "base": _pull_end(stored["base"], base_repo),
        "_links": pull_links(full_name, number, stored["head"]["sha"], api_url),
        "author_association": author_association,
        # GitHub computes these lazily; an open PR of the double always merges cleanly.
        "mergeable": True if is_open else None,
        "rebaseable": True if is_open else None,
        "mergeable_state": "clean" if is_open else "unknown",
        **(stats or {}),
    }
    if stats is None:
        for key in _FULL_PULL_ONLY:
            shape.pop(key, None)
    return shape


def _pull_end(end: dict[str, Any], repo: dict[str, Any] | None) -> dict[str, Any]:
    """A PR's ``head`` or ``base``: ref, sha and label, with the repository and its owner."""
    return {**end, "repo": repo, "user": repo["owner"] if repo else None}
