"""Forks on the fake GitHub: a fork is a real bare clone of its parent, and PRs cross between them.

``fork(state, parent, owner)`` makes ``owner/<name>`` from ``parent`` (every branch copied, as
GitHub does). ``open_fork_pull`` opens a PR from a fork's branch into its parent as the fork's
author would, with or without ``maintainer_can_modify`` ("Allow edits by maintainers").
``POST /repos/{repo}/pulls`` whose ``head`` is ``owner:branch`` of another repository of the
same network — a fork into its parent, or the parent into a fork — is answered by
``create_cross_pull`` (``github_routes.create_pull`` hands it over). Such a PR's ``head.repo`` is
the head repository, and its head commit is fetched into the base's ``refs/pull/N/head`` and
follows the branch, as on GitHub.

``move_during_next_push`` is the seam for "the branch moved while the bot worked": a one-shot
``pre-receive`` hook that moves a branch just before the next push into the repository updates
it, so that push loses the race exactly as it would against another person's push.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fakes.github_api import FakeGitHub, Request
from tests.fakes.github_git import FakeRepo, git_out

Answer = tuple[int, Any]


@dataclass
class FakeFork(FakeRepo):
    """A repository forked from ``parent`` (``fork: true``, ``parent``/``source`` in its JSON)."""

    parent: FakeRepo | None = None

    def json(self, api_url: str, *, full: bool = True) -> dict[str, Any]:
        """The repository object, marked as a fork of its parent."""
        shape = super().json(api_url, full=full)
        shape["fork"] = True
        if full and self.parent is not None:
            parent = self.parent.json(api_url, full=False)
            shape.update(parent=parent, source=_root(self).json(api_url, full=False))
        return shape


def fork(state: FakeGitHub, parent: str, owner: str) -> FakeFork:
    """``owner``'s fork of ``parent``: a bare clone of it, with every branch."""
    source = state.repos[parent]
    name = f"{owner}/{parent.split('/', 1)[1]}"
    made = FakeFork.create(state.root, name, source.path, source.default_branch)
    assert isinstance(made, FakeFork)  # ``create`` builds the class it is called on
    made.parent, made.api_url = source, state.url
    with state.lock:
        state.repos[name] = made
    return made


def open_fork_pull(
    state: FakeGitHub,
    head: FakeFork,
    *,
    branch: str,
    title: str,
    maintainer_can_modify: bool,
    login: str | None = None,
) -> int:
    """A PR from ``head``'s ``branch`` into its parent's default branch, opened by the fork's
    owner (or ``login``); returns its number in the parent."""
    assert head.parent is not None
    with state.lock:
        number = head.parent.add_pull(
            state.next_id(), branch, None, title, "", login or head.owner, head_repo=head
        )
        head.parent.pulls[number]["maintainer_can_modify"] = maintainer_can_modify
    return number


def _root(repo: FakeRepo) -> FakeRepo:
    while isinstance(repo, FakeFork) and repo.parent is not None:
        repo = repo.parent
    return repo


def _in_network(state: FakeGitHub, base: FakeRepo, owner: str) -> FakeRepo | None:
    """``owner``'s repository in ``base``'s network (the parent and all its forks)."""
    for repo in state.repos.values():
        if repo.owner == owner and _root(repo) is _root(base):
            return repo
    return None


def cross_repository(repo: FakeRepo, body: dict[str, Any]) -> bool:
    """Whether a create-PR request's ``head`` names another owner's branch (``owner:branch``)."""
    owner, colon, _ = str(body.get("head") or "").rpartition(":")
    return bool(colon) and owner != repo.owner


def _invalid(field: str) -> Answer:
    return 422, {"message": "Validation Failed", "errors": [{"field": field, "code": "invalid"}]}


def create_cross_pull(state: FakeGitHub, request: Request, repo: FakeRepo) -> Answer:
    """``POST /repos/{repo}/pulls`` with ``head=owner:branch`` from another repository."""
    body = request.body or {}
    missing = [k for k in ("title", "head", "base") if not body.get(k)]
    if missing:
        return 422, {"message": "Validation Failed", "errors": [{"field": m} for m in missing]}
    label = str(body["head"])
    owner, _, branch = label.rpartition(":")
    head_repo = _in_network(state, repo, owner)
    try:
        if head_repo is None:
            return _invalid("head")
        head_repo.sha(f"refs/heads/{branch}")
    except RuntimeError:
        return _invalid("head")
    try:
        repo.sha(f"refs/heads/{body['base']}")
    except RuntimeError:
        return _invalid("base")
    for pull in repo.pulls.values():
        if pull["state"] == "open" and pull["head"]["label"] == label:
            message = f"A pull request already exists for {label}."
            return 422, {"message": "Validation Failed", "errors": [{"message": message}]}
    number = repo.add_pull(
        state.next_id(),
        branch,
        str(body["base"]),
        str(body["title"]),
        str(body.get("body") or ""),
        request.login,
        head_repo=head_repo,
    )
    repo.pulls[number]["maintainer_can_modify"] = bool(body.get("maintainer_can_modify"))
    return 201, state.pull_json(repo, repo.pulls[number])


_RACE_HOOK = """#!/bin/sh
# One shot (tests/fakes/github_forks.py): someone else's push lands first.
unset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES
git update-ref "refs/heads/{branch}" "{commit}"
rm -f "$0"
cat >/dev/null
"""


def move_during_next_push(repo: FakeRepo, branch: str, source: Path, commit: str) -> None:
    """Make ``branch`` of ``repo`` move to ``commit`` (a commit of the local repository
    ``source``) while the next push into ``repo`` is being received, before it updates refs.

    The hook runs after the pusher's client-side checks and before the server's own
    compare-and-swap of the ref, the window in which a concurrent push really lands; the hook
    leaves the quarantine to move the ref, and removes itself.
    """
    git_out(source, "push", "--quiet", str(repo.path), f"{commit}:refs/racing/{branch}")
    hook = repo.path / "hooks" / "pre-receive"
    hook.write_text(_RACE_HOOK.format(branch=branch, commit=commit), encoding="utf-8")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)


def branch_log(repo: FakeRepo, branch: str) -> list[str]:
    """The commits of ``branch``, newest first (to tell what a push added)."""
    return git_out(repo.path, "rev-list", f"refs/heads/{branch}").split()
