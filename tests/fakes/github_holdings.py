"""What the GitHub double holds, counted the way a test of "each effect once" asks: comments per
PR, statuses per commit, PRs per branch, reviews per PR, and write requests per kind.

``FakeGitHub`` inherits these (``tests/fakes/github_api.py``), so every test and the chaos soak
(``bench/chaos.py``) read the same answers off one double instead of each parsing ``calls``.
Everything is read under the double's lock: the server adds to it from its own threads.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fakes.github_api import Call
    from tests.fakes.github_git import FakeRepo

# What each successful write request is, by method and path (the first match wins).
WRITE_KINDS: tuple[tuple[str, re.Pattern[str], str], ...] = tuple(
    (method, re.compile(pattern), kind)
    for method, pattern, kind in (
        ("POST", r"/pulls/\d+/reviews/\d+/", "review-other"),
        ("PUT", r"/pulls/\d+/reviews/\d+$", "review-edit"),
        ("POST", r"/pulls/\d+/reviews$", "review"),
        ("PATCH", r"/pulls/comments/\d+$", "review-comment-edit"),
        ("POST", r"/pulls$", "pull"),
        ("PATCH", r"/pulls/\d+$", "pull-edit"),
        ("POST", r"/issues/\d+/comments$", "comment"),
        ("PATCH", r"/issues/comments/\d+$", "comment-edit"),
        ("POST", r"/issues/comments/\d+/reactions$", "reaction"),
        ("POST", r"/issues/\d+/labels$", "label"),
        ("POST", r"/statuses/[0-9a-f]+$", "status"),
    )
)


class GitHubHoldings:
    """Public read-outs of the double's state; mixed into ``FakeGitHub``."""

    repos: dict[str, FakeRepo]
    calls: list[Call]
    lock: threading.RLock

    def comments_on(self, repository: str, number: int) -> list[dict[str, Any]]:
        """The issue comments on PR (or issue) ``number``, oldest first, as the API shows them
        (``body`` is the text GitHub holds now, after any edit)."""
        with self.lock:
            return [dict(c) for c in self.repos[repository].comments.get(number, [])]

    def comment_bodies(self, repository: str, number: int) -> list[str]:
        """Just the texts of ``comments_on``."""
        return [str(c["body"]) for c in self.comments_on(repository, number)]

    def statuses_of(self, repository: str, sha: str) -> list[tuple[str, str, str]]:
        """Every status POSTed on commit ``sha``, in posting order, as ``(context, state,
        description)``; GitHub shows the last one of each context."""
        with self.lock:
            return [
                (str(s["context"]), str(s["state"]), str(s.get("description") or ""))
                for s in self.repos[repository].statuses
                if s["sha"] == sha
            ]

    def status_now(self, repository: str, sha: str, context: str) -> tuple[str, str] | None:
        """``(state, description)`` GitHub shows for ``context`` on ``sha`` (the last POSTed)."""
        found = [(st, d) for c, st, d in self.statuses_of(repository, sha) if c == context]
        return found[-1] if found else None

    def pulls_of(self, repository: str, *, head: str | None = None) -> list[dict[str, Any]]:
        """Every PR of the repository, oldest first (``number``, ``head``, ``state``, ``title``,
        ``body``), only those from branch ``head`` when given."""
        with self.lock:
            pulls = [self.repos[repository].pulls[n] for n in sorted(self.repos[repository].pulls)]
            return [
                {
                    "number": p["number"],
                    "head": p["head"]["ref"],
                    "state": p["state"],
                    "title": p["title"],
                    "body": p["body"],
                }
                for p in pulls
                if head is None or p["head"]["ref"] == head
            ]

    def writes(self, repository: str | None = None) -> Counter[str]:
        """How many write requests GitHub accepted (2xx), by kind (``pull``, ``pull-edit``,
        ``comment``, ``comment-edit``, ``reaction``, ``status``, ``review``, ``review-edit``,
        ``review-comment-edit``, ``label``), in ``repository`` when given. Refused requests
        (faults, 4xx) are not counted: they changed nothing."""
        prefix = f"/repos/{repository}/" if repository else "/repos/"
        counts: Counter[str] = Counter()
        with self.lock:
            calls = [c for c in self.calls if c.path.startswith(prefix) and c.status < 300]
        for call in calls:
            for method, pattern, kind in WRITE_KINDS:
                if call.method == method and pattern.search(call.path.split("?")[0]):
                    counts[kind] += 1
                    break
        return counts
