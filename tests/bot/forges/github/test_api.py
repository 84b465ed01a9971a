"""``GitHubApi``'s writes that used to be plain retried calls, now outbox writes: closing a PR
and editing a comment are recorded before they are sent, sent once per key (on SQLite and
PostgreSQL), and found again on GitHub when their answer was lost."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from bot.db.records.github_writes import GitHubWrite
from bot.db.session import session_scope
from bot.forges.github.api import GitHubApi
from tests.bot.conftest import REPO
from tests.fakes.github_git import git_out


@pytest.fixture
def pull(gh_settings, github_api, target) -> int:
    repo, head = target
    git_out(repo.path, "branch", "feature", head)
    return github_api.open_pull(REPO, head="feature", title="[None][feat] f")


def _kinds(settings) -> list[tuple[str, str | None]]:
    with session_scope(settings.resolved_database_url) as session:
        return [(w.kind, w.remote_id) for w in session.scalars(select(GitHubWrite))]


def test_a_pr_is_closed_once_per_key(gh_settings, github_api, pull):
    api = GitHubApi(gh_settings)
    first = api.close_pull(REPO, pull, key=f"close:{REPO}:{pull}")
    again = api.close_pull(REPO, pull, key=f"close:{REPO}:{pull}")  # a redelivery
    assert (first.remote_id, again.fresh) == (str(pull), False)
    assert [p["state"] for p in github_api.pulls_of(REPO, head="feature")] == ["closed"]
    assert github_api.writes(REPO)["pull-edit"] == 1
    assert _kinds(gh_settings) == [("pull-close", str(pull))]


def test_a_close_whose_answer_was_lost_is_found_closed(gh_settings, github_api, pull):
    github_api.fault("PATCH", rf"/pulls/{pull}$", status=502, after_effect=True)
    written = GitHubApi(gh_settings).close_pull(REPO, pull, key="close:lost")
    assert written.remote_id == str(pull)
    assert len(github_api.calls_to("PATCH", rf"/pulls/{pull}$")) == 1  # found, not re-sent


def test_an_edit_is_sent_once_per_edit_key_and_found_by_its_text(gh_settings, github_api, pull):
    api = GitHubApi(gh_settings)
    posted = api.post_comment(None, REPO, pull, "first", key="c1")
    comment_id = int(posted.remote_id)
    api.edit_comment(REPO, pull, comment_id, "second", key="c1", edit_key="c1:v2")
    api.edit_comment(REPO, pull, comment_id, "second", key="c1", edit_key="c1:v2")
    github_api.fault("PATCH", rf"/issues/comments/{comment_id}$", status=502, after_effect=True)
    api.edit_comment(REPO, pull, comment_id, "third", key="c1", edit_key="c1:v3")
    [body] = github_api.comment_bodies(REPO, pull)
    assert body.startswith("third") and "<!-- repairbot:" in body  # the marker is kept
    assert len(github_api.calls_to("PATCH", rf"/issues/comments/{comment_id}$")) == 2
    assert sorted(kind for kind, _ in _kinds(gh_settings)) == [
        "comment",
        "comment-edit",
        "comment-edit",
    ]
