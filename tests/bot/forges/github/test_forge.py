"""The GitHub forge through PyGithub over HTTP against the fake GitHub (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest
from github import GithubException
from pydantic import SecretStr

from bot.db.models import Fix, FixComment
from bot.db.records.github_writes import GitHubWrite
from bot.db.session import session_scope
from bot.forges.github.client import GitHubNotConfigured, credentials
from bot.forges.github.forge import GitHubForge
from bot.forges.github.mirror import push_branch, sync_mirror
from bot.forges.github.write_ops import comment_marker
from bot.forges.select import forge_for
from tests.bot.conftest import REPO
from tests.fakes.github_api import APP_ID, INSTALLATION_ID
from tests.fakes.github_deliveries import send_pending_writes
from tests.fakes.github_git import git_out


def _push_fix_branch(gh_settings, forge, head, branch="repairbot/x/1"):
    mirror = sync_mirror(gh_settings, REPO, forge.token())
    push_branch(
        gh_settings, REPO, mirror, branch=branch, commit=head, token=forge.token(), force=True
    )
    return mirror


def _fix_row(session, number, head):
    fix = Fix(
        forge="github",
        repository=REPO,
        number=number,
        dedupe_key="k",
        signature="s",
        base_sha=head,
        branch="repairbot/x/1",
        head_sha=head,
        title="t",
        body="b",
        diff="",
    )
    session.add(fix)
    session.flush()
    return fix


def test_push_open_comment_status_permission_reaction(gh_settings, github_api, target):
    repo, head = target
    forge = GitHubForge(gh_settings)
    _push_fix_branch(gh_settings, forge, head)
    assert repo.sha("refs/heads/repairbot/x/1") == head
    pull = forge.open_pull(
        REPO, key="pull:1", branch="repairbot/x/1", base="main", title="[None][fix] t", body="body"
    )
    assert github_api.pulls(REPO)[0]["number"] == int(pull.remote_id)
    again = forge.open_pull(
        REPO, key="pull:1", branch="repairbot/x/1", base="main", title="[None][fix] t", body="body"
    )
    assert again.remote_id == pull.remote_id and not again.fresh
    assert len(github_api.calls_to("POST", r"/pulls$")) == 1

    with session_scope(gh_settings.resolved_database_url) as session:
        fix = _fix_row(session, int(pull.remote_id), head)
        github = forge_for(fix, gh_settings)
        github.comment(session, fix, "hello")
        github.comment(session, fix, "hello")  # same body, same default key: posted once
        github.set_status(
            session, fix, state="pending", context="repairbot/verify", description="x" * 300
        )
        kinds = [c.kind for c in session.query(FixComment).filter_by(fix_id=fix.id)]
        assert repo.comments.get(int(pull.remote_id), []) == []  # deferred to the commit
    assert len(send_pending_writes(gh_settings)) == 2  # the comment and the status, once each
    comments = repo.comments[int(pull.remote_id)]
    assert [c["body"].split("\n")[0] for c in comments] == ["hello"]
    assert repo.statuses[0]["sha"] == head and len(repo.statuses[0]["description"]) == 140
    assert kinds == ["comment", "status"]

    repo.permissions.update({"writer": "write", "reader": "read"})
    assert forge.permission(REPO, "writer") == "write"
    assert forge.permission(REPO, "reader") == "read"
    assert forge.permission(REPO, "stranger") == "none"
    assert forge.permission(REPO, "ghost-user") == "none"
    forge.react(None, REPO, int(pull.remote_id), comments[0]["id"], "+1")
    assert repo.reactions[0]["content"] == "+1"
    infos = forge.open_pulls(REPO, limit=10)
    assert [(p.number, p.head_ref) for p in infos] == [(int(pull.remote_id), "repairbot/x/1")]


def test_app_mode_mints_installation_tokens_and_refreshes_them(
    gh_settings, github_api, target, tmp_path
):
    repo, head = target
    key = tmp_path / "app.pem"
    key.write_text(github_api.private_key_pem)
    settings = gh_settings.model_copy(
        update={
            "github_token": None,
            "github_app_id": APP_ID,
            "github_installation_id": INSTALLATION_ID,
            "github_private_key_path": key,
        }
    )
    from datetime import timedelta

    github_api.token_lifetime = timedelta(seconds=5)  # inside PyGithub's refresh margin
    forge = GitHubForge(settings)
    assert forge.default_branch(REPO) == "main"
    assert forge.default_branch(REPO) == "main"
    minted = github_api.calls_to("POST", r"/app/installations/77/access_tokens")
    assert len(minted) >= 2  # expiring tokens are replaced before use
    _push_fix_branch(settings, forge, head, branch="repairbot/app/1")
    assert repo.sha("refs/heads/repairbot/app/1") == head


def test_credentials_are_checked_with_a_clear_error(gh_settings):
    with pytest.raises(GitHubNotConfigured, match="REPAIRBOT_GITHUB_TOKEN"):
        credentials(gh_settings.model_copy(update={"github_token": None}))
    with pytest.raises(GitHubNotConfigured, match="PEM private key"):
        credentials(
            gh_settings.model_copy(
                update={"github_app_id": 1, "github_private_key": SecretStr("x")}
            )
        )
    with pytest.raises(GitHubNotConfigured, match="INSTALLATION_ID"):
        credentials(
            gh_settings.model_copy(
                update={
                    "github_app_id": 1,
                    "github_private_key": SecretStr("-----BEGIN PRIVATE KEY-----"),
                }
            )
        )


def test_a_wrong_token_is_a_clear_401_and_the_token_never_reaches_git_errors(gh_settings, target):
    forge = GitHubForge(
        gh_settings.model_copy(update={"github_token": SecretStr("wrong-token-123")})
    )
    with pytest.raises(GithubException) as caught:
        forge.default_branch(REPO)
    assert caught.value.status == 401
    from bot.git import GitError

    bad = gh_settings.model_copy(
        update={"github_git_url_template": "file:///nonexistent/{repository}.git"}
    )
    with pytest.raises(GitError) as failed:
        sync_mirror(bad, REPO, "secret-token-value")
    assert "secret-token-value" not in str(failed.value)


def test_writes_are_recorded_for_the_rate_cap(gh_settings, github_api, target):
    repo, head = target
    forge = GitHubForge(gh_settings)
    _push_fix_branch(gh_settings, forge, head)
    forge.open_pull(REPO, key="pull:2", branch="repairbot/x/1", base="main", title="t", body="b")
    with session_scope(gh_settings.resolved_database_url) as session:
        rows = session.query(GitHubWrite).all()
    assert [(r.kind, r.remote_id is not None) for r in rows] == [("pull", True)]
    assert git_out(repo.path, "rev-parse", "refs/heads/main") == head


def test_a_write_key_too_long_for_its_column_is_stored_as_a_digest(gh_settings, github_api, target):
    _repo, head = target
    forge = GitHubForge(gh_settings)
    _push_fix_branch(gh_settings, forge, head)
    long_key = f"pull:{REPO}:{'k' * 64}:" + "x" * 200  # a 100-character repository name, say
    first = forge.open_pull(
        REPO, key=long_key, branch="repairbot/x/1", base="main", title="[None][fix] t", body="b"
    )
    again = forge.open_pull(
        REPO, key=long_key, branch="repairbot/x/1", base="main", title="[None][fix] t", body="b"
    )
    assert again.remote_id == first.remote_id and not again.fresh
    other = forge.open_pull(  # the same beginning is a different key: never a truncation
        REPO, key=long_key[:-1] + "y", branch="repairbot/x/1", base="main", title="t", body="b"
    )
    assert other.remote_id == first.remote_id  # GitHub refuses a second PR: found by its head
    with session_scope(gh_settings.resolved_database_url) as session:
        keys = [w.key for w in session.query(GitHubWrite).order_by(GitHubWrite.id)]
    assert len(keys) == 2 and all(k.startswith("sha256:") and len(k) == 71 for k in keys)
    assert [c.status for c in github_api.calls_to("POST", r"/pulls$")] == [201, 422]


def test_a_strangers_comment_carrying_our_marker_is_not_taken_for_ours(
    gh_settings, github_api, target
):
    repo, head = target
    git_out(repo.path, "branch", "feature", head)
    number = github_api.open_pull(REPO, head="feature", title="[None][feat] f")
    forge = GitHubForge(gh_settings)
    key = f"reply:{REPO}:42"
    # The marker is a digest of a key anyone can guess: a stranger posts it first.
    spoof = "nothing to see\n\n" + comment_marker(key)
    github_api.comment_event(REPO, number, spoof, login="mallory")
    written = forge.post_comment(None, REPO, number, "the real reply", key=key)
    authors = [(c["user"]["login"], c["body"].split("\n")[0]) for c in repo.comments[number]]
    assert authors == [("mallory", "nothing to see"), ("repairbot[bot]", "the real reply")]
    assert written.remote_id == str(repo.comments[number][1]["id"])
