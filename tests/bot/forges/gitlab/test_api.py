"""The GitLab forge's writes against the double, through python-gitlab: one merge request per
key, notes and statuses deferred into the caller's transaction and sent once, a lost answer
found again instead of posted twice, GitLab's refusals kept with the reason."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from bot.db.models import Fix, FixComment
from bot.db.records.github_writes import GitHubWrite
from bot.db.session import session_scope
from bot.forges.github.write_ops import comment_marker
from bot.forges.gitlab.forge import GitLabForge
from bot.forges.gitlab.remote import push_branch, sync_mirror
from bot.forges.select import forge_for
from bot.pipeline.github_send import send_write
from bot.pipeline.task_base import TransientError
from tests.fakes.github_deliveries import send_pending_writes
from tests.fakes.github_git import git_out

PROJECT = "gpu/inference/trt"
BRANCH = "repairbot/fix/1"


@pytest.fixture
def pushed(gl_settings, gitlab_api):
    """The project, with a fix branch pushed through the forge's git remote."""
    project = gitlab_api.new_project(PROJECT)
    forge = GitLabForge(gl_settings)
    mirror = sync_mirror(gl_settings, PROJECT, forge.token())
    head = git_out(mirror, "rev-parse", "refs/heads/main")
    push_branch(gl_settings, PROJECT, mirror, branch=BRANCH, commit=head, token=forge.token())
    return project, forge, head


def _open(forge, key="merge-request:1"):
    return forge.open_merge_request(
        PROJECT, key=key, branch=BRANCH, base="main", title="[None][fix] t", body="body"
    )


def _fix(settings, number, head) -> int:
    with session_scope(settings.resolved_database_url) as session:
        fix = Fix(
            forge="gitlab", repository=PROJECT, number=number, dedupe_key="k", signature="s",
            base_sha=head, branch=BRANCH, head_sha=head, title="t", body="b", diff="",
        )  # fmt: skip
        session.add(fix)
        session.flush()
        return fix.id


def test_a_merge_request_is_opened_once_per_key(gl_settings, gitlab_api, pushed):
    project, forge, head = pushed
    first, again = _open(forge), _open(forge)
    assert first.fresh and not again.fresh and first.remote_id == again.remote_id == "1"
    assert first.url == f"{project.web_url}/-/merge_requests/1"
    [mr] = project.merge_requests.values()
    assert (mr["source_branch"], mr["target_branch"], mr["sha"]) == (BRANCH, "main", head)
    assert len(gitlab_api.calls_to("POST", r"/merge_requests$")) == 1


def test_a_merge_request_whose_answer_was_lost_is_found_not_opened_again(
    gl_settings, gitlab_api, pushed
):
    project, forge, _ = pushed
    gitlab_api.fault("POST", r"/merge_requests$", status=502, after_effect=True)
    with pytest.raises(Exception, match="502"):
        _open(forge)
    # The retry looks first (the outbox's row holds a slot and no result): it finds the open one.
    found = _open(forge)
    assert found.remote_id == "1" and len(project.merge_requests) == 1
    assert len(gitlab_api.calls_to("POST", r"/merge_requests$")) == 1


def test_an_open_merge_request_from_the_branch_answers_409_and_is_taken(
    gl_settings, gitlab_api, pushed
):
    project, forge, _ = pushed
    _open(forge, key="merge-request:first")
    again = _open(forge, key="merge-request:second")  # another key, the same branch
    assert again.remote_id == "1" and len(project.merge_requests) == 1
    assert [c.status for c in gitlab_api.calls_to("POST", r"/merge_requests$")] == [201, 409]


def test_notes_and_statuses_are_deferred_and_sent_once(gl_settings, gitlab_api, pushed):
    project, forge, head = pushed
    iid = int(_open(forge).remote_id)
    fix_id = _fix(gl_settings, iid, head)
    for sent_before in (0, 1):  # asked twice (a retried task): recorded and sent once
        with session_scope(gl_settings.resolved_database_url) as session:
            fix = session.get_one(Fix, fix_id)
            forge_for(fix, gl_settings).comment(
                session, fix, "Verified: fixed.", key="verification-1"
            )
        assert len(project.notes[iid]) == sent_before  # nothing leaves before the commit
        send_pending_writes(gl_settings)
    with session_scope(gl_settings.resolved_database_url) as session:
        fix = session.get_one(Fix, fix_id)
        forge.set_status(
            session, fix, state="failure", context="repairbot/verify", description="x" * 300
        )
    send_pending_writes(gl_settings)
    [note] = project.notes[iid]
    assert note["body"] == "Verified: fixed.\n\n" + comment_marker("verification-1")
    [status] = project.statuses
    assert (status["sha"], status["status"], status["name"]) == (head, "failed", "repairbot/verify")
    assert status["description"] == "x" * 255
    with session_scope(gl_settings.resolved_database_url) as session:
        kinds = session.scalars(select(FixComment.kind).where(FixComment.fix_id == fix_id)).all()
    assert sorted(kinds) == ["comment", "status"]


def test_a_note_whose_answer_was_lost_is_found_by_its_marker(gl_settings, gitlab_api, pushed):
    project, forge, head = pushed
    iid = int(_open(forge).remote_id)
    fix_id = _fix(gl_settings, iid, head)
    with session_scope(gl_settings.resolved_database_url) as session:
        fix = session.get_one(Fix, fix_id)
        forge.comment(session, fix, "Verified.", key="verification-7")
    with session_scope(gl_settings.resolved_database_url) as session:
        write_id = session.scalars(
            select(GitHubWrite.id).where(GitHubWrite.kind == "gitlab-note")
        ).one()
    gitlab_api.fault("POST", r"/notes$", status=502, after_effect=True)
    with pytest.raises(TransientError, match="GitLab answered 502"):
        send_write(gl_settings, write_id)
    assert send_write(gl_settings, write_id).startswith(f"write #{write_id} sent: gitlab-note")
    assert len(project.notes[iid]) == 1
    assert len(gitlab_api.calls_to("POST", r"/notes$")) == 1


def test_a_note_gitlab_refuses_is_kept_with_the_reason_and_not_sent_again(
    gl_settings, gitlab_api, pushed
):
    _, forge, head = pushed
    fix_id = _fix(gl_settings, 99, head)  # no such merge request
    with session_scope(gl_settings.resolved_database_url) as session:
        forge.comment(session, session.get_one(Fix, fix_id), "hello")
    assert send_pending_writes(gl_settings)[0].endswith("refused by GitLab (404)")
    assert send_pending_writes(gl_settings) == []
    with session_scope(gl_settings.resolved_database_url) as session:
        assert "GitLab answered 404" in session.scalars(select(GitHubWrite.error)).one()
