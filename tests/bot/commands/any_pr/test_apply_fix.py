"""``/repairbot apply-fix`` through signed ``issue_comment`` deliveries: the webhook endpoint, the
real ``process_delivery`` task, the ``repairbot.apply_fix`` message it queues (read back from the
filesystem broker and run as a worker would), the fake GitHub with real forks and real pushes,
and our database."""

from __future__ import annotations

import subprocess

import pytest
from sqlalchemy import select

from bot.commands.any_pr.apply_fix_run import TRAILER
from bot.db.models import CommandInvocation
from bot.db.session import session_scope
from bot.git import commit_all, fresh_worktree, git
from bot.pipeline.repair.apply_fix import apply_fix
from bot.queue import names as task_names
from fixers.sweep.run import fix, sweep, write_changes
from tests.bot.commands.test_dispatch_end_to_end import _deliver, _replies
from tests.bot.conftest import REPO
from tests.bot.intake.broker import sent_tasks
from tests.fakes.github_forks import branch_log, fork, move_during_next_push, open_fork_pull
from tests.fakes.github_git import git_out

FEATURE = "alice/feature"


@pytest.fixture
def acme(gh_settings, github_api, target, task_settings):
    """``acme/trt`` with a writer and a reader; tasks read ``gh_settings``."""
    task_settings(gh_settings)
    repo, head = target
    repo.permissions.update({"writer": "write", "reader": "read"})
    return repo, head


@pytest.fixture
def same_repo_pr(github_api, acme):
    """A human's PR from a branch of ``acme/trt`` whose head has the legacy violations."""
    repo, head = acme
    git_out(repo.path, "branch", FEATURE, head)
    return repo, github_api.open_pull(REPO, head=FEATURE, title="[None][feat] a feature"), head


def _fork_pr(github_api, acme, *, maintainer_can_modify: bool):
    repo, head = acme
    forked = fork(github_api, REPO, "alice")
    git_out(forked.path, "branch", "feature", head)
    number = open_fork_pull(
        github_api,
        forked,
        branch="feature",
        title="[None][feat] from a fork",
        maintainer_can_modify=maintainer_can_modify,
    )
    return repo, forked, number, head


def _ask(settings, github_api, number, text="/repairbot apply-fix", login="writer"):
    payload = github_api.comment_event(REPO, number, text, login=login)
    _deliver(settings, github_api, payload, f"d-{payload['comment']['id']}")
    return payload["comment"]["id"]


def _queued(settings):
    return [args for name, args in sent_tasks(settings) if name == task_names.APPLY_FIX]


def _work(settings):
    """Run every queued ``repairbot.apply_fix`` message, as a worker consuming them would."""
    return [apply_fix.apply(args=args).get() for args in _queued(settings)]


def _audit(settings):
    with session_scope(settings.resolved_database_url) as session:
        return [
            (a.author, a.command, a.outcome, a.fix_id)
            for a in session.scalars(select(CommandInvocation).order_by(CommandInvocation.id))
        ]


def _clean_at(bare, commit, tmp_path, name):
    checkout = fresh_worktree(bare, tmp_path / name, commit)
    return sweep(checkout).violations == []


def test_a_same_repository_pr_gets_exactly_one_fix_commit(
    gh_settings, github_api, same_repo_pr, tmp_path
):
    repo, number, head = same_repo_pr
    comment = _ask(gh_settings, github_api, number)
    assert _audit(gh_settings) == [("writer", "apply-fix", "queued", None)]
    assert _queued(gh_settings) == [[_audit_id(gh_settings), comment]]
    with session_scope(gh_settings.resolved_database_url) as session:  # for the reconciler
        row = session.scalars(select(CommandInvocation)).one()
        assert row.comment_id == comment and row.sent_at is not None
    assert [r["content"] for r in repo.reactions] == ["eyes"]
    assert _replies(repo, number) == []  # the reply comes with the work
    assert _work(gh_settings) == ["accepted"]
    pushed = repo.sha(f"refs/heads/{FEATURE}")
    assert branch_log(repo, FEATURE)[1:] == [head]  # one commit, on top of the head
    assert _clean_at(repo.path, pushed, tmp_path, "after")
    message = git_out(repo.path, "show", "-s", "--format=%an|%B", pushed)
    assert message.startswith("repairbot|Fix ")
    assert f"Requested-by: @writer ({REPO}#{number})" in message
    assert f"{TRAILER}: {_audit_id(gh_settings)}" in message
    [reply] = _replies(repo, number)
    assert reply.startswith(f"@writer pushed `{pushed[:12]}` to `{REPO}:{FEATURE}`")
    assert [r["content"] for r in repo.reactions] == ["eyes", "+1"]
    assert _audit(gh_settings) == [("writer", "apply-fix", "accepted", None)]


def test_running_the_work_again_pushes_nothing_and_replies_once(
    gh_settings, github_api, same_repo_pr
):
    repo, number, _head = same_repo_pr
    _ask(gh_settings, github_api, number)
    _work(gh_settings)
    pushed = repo.sha(f"refs/heads/{FEATURE}")
    assert _work(gh_settings) == ["already answered"]  # a redelivered message
    with session_scope(gh_settings.resolved_database_url) as session:  # as if the answer was lost
        session.scalars(select(CommandInvocation)).one().outcome = "queued"
    assert _work(gh_settings) == ["accepted"]
    assert repo.sha(f"refs/heads/{FEATURE}") == pushed
    assert len(_replies(repo, number)) == 1


def test_a_fork_without_maintainer_edits_waits_for_a_maintainer_to_confirm_its_head(
    gh_settings, github_api, acme, tmp_path
):
    repo, forked, number, head = _fork_pr(github_api, acme, maintainer_can_modify=False)
    branch = f"repairbot-fork/apply-fix/{number}"
    _ask(gh_settings, github_api, number)
    assert _work(gh_settings) == ["refused"]  # the fork's commits would enter this repository
    [reply] = _replies(repo, number)
    assert f"`{branch}` in {REPO}" in reply and f"head `{head[:12]}`" in reply
    assert f"`/repairbot apply-fix --confirm-fork {head[:12]}`" in reply
    assert f"refs/heads/{branch}" not in git_out(repo.path, "for-each-ref")
    assert github_api.pulls("alice/trt") == []

    # Confirmed for another head (the fork moved since it was reviewed): nothing either.
    _ask(gh_settings, github_api, number, "/repairbot apply-fix --confirm-fork 0123abc")
    assert _work(gh_settings)[-1] == "refused"
    assert "not the confirmed `0123abc`" in _replies(repo, number)[-1]

    _ask(gh_settings, github_api, number, f"/repairbot apply-fix --confirm-fork {head[:12]}")
    assert _work(gh_settings)[-1] == "accepted"
    assert forked.sha("refs/heads/feature") == head  # the author's branch is untouched
    [opened] = github_api.pulls("alice/trt")
    assert opened["base"]["ref"] == "feature" and opened["base"]["repo"]["full_name"] == "alice/trt"
    assert opened["head"]["label"] == f"acme:{branch}"
    assert opened["head"]["repo"]["full_name"] == REPO
    assert opened["maintainer_can_modify"] is False
    fixed = opened["head"]["sha"]
    assert branch_log(repo, branch)[1:] == [head]  # the confirmed head and our one commit
    assert _clean_at(repo.path, fixed, tmp_path, "fork-fix")
    reply = _replies(repo, number)[-1]
    assert "does not allow edits from maintainers, so nothing was pushed to it" in reply
    assert opened["html_url"] in reply
    assert github_api.pulls(REPO, state="open")[0]["head"]["sha"] == head
    assert [outcome for _, _, outcome, _ in _audit(gh_settings)] == [
        "refused",
        "refused",
        "accepted",
    ]


def test_a_fork_with_maintainer_edits_gets_the_commit_on_its_branch(
    gh_settings, github_api, acme, tmp_path
):
    repo, forked, number, head = _fork_pr(github_api, acme, maintainer_can_modify=True)
    _ask(gh_settings, github_api, number)
    assert _work(gh_settings) == ["accepted"]
    pushed = forked.sha("refs/heads/feature")
    assert branch_log(forked, "feature")[1:] == [head]
    assert _clean_at(forked.path, pushed, tmp_path, "fork-pushed")
    assert github_api.pulls("alice/trt") == []
    assert github_api.pulls(REPO)[0]["head"]["sha"] == pushed  # the PR follows the fork's branch
    assert f"pushed `{pushed[:12]}` to `alice/trt:feature`" in _replies(repo, number)[0]
    assert "repairbot/apply-fix" not in git_out(repo.path, "branch", "--list")


def test_a_branch_that_moves_during_the_work_is_never_overwritten(
    gh_settings, github_api, same_repo_pr, tmp_path
):
    repo, number, head = same_repo_pr
    author = tmp_path / "author"
    subprocess.run(["git", "clone", "--quiet", str(repo.path), str(author)], check=True)
    git(author, "checkout", "--quiet", FEATURE)
    (author / "NOTES.md").write_text("the author's next commit\n")
    theirs = commit_all(author, "Author's next commit")
    _ask(gh_settings, github_api, number)
    move_during_next_push(repo, FEATURE, author, theirs)
    assert _work(gh_settings) == ["refused"]
    assert repo.sha(f"refs/heads/{FEATURE}") == theirs  # the other push stands; nothing forced
    assert branch_log(repo, FEATURE) == [theirs, head]
    [reply] = _replies(repo, number)
    assert f"`{REPO}:{FEATURE}` moved while the fix was being made" in reply
    assert "nothing was pushed and nothing forced" in reply
    assert [r["content"] for r in repo.reactions] == ["eyes"]
    assert _audit(gh_settings) == [("writer", "apply-fix", "refused", None)]


def test_a_clean_head_gets_told_so_and_nothing_is_pushed(gh_settings, github_api, acme, tmp_path):
    repo, _head = acme
    human = tmp_path / "human"
    subprocess.run(["git", "clone", "--quiet", str(repo.path), str(human)], check=True)
    write_changes(human, fix(human, None, imports=False))
    clean = commit_all(human, "Rename forward to _forward_impl")
    git(human, "push", "--quiet", "origin", f"{clean}:refs/heads/alice/clean")
    number = github_api.open_pull(REPO, head="alice/clean", title="[None][fix] rename")
    _ask(gh_settings, github_api, number)
    assert _work(gh_settings) == ["accepted"]
    assert repo.sha("refs/heads/alice/clean") == clean
    [reply] = _replies(repo, number)
    assert f"no contract violations on this PR's head `{clean[:12]}`" in reply


def test_a_non_writer_is_refused_with_the_reason_and_nothing_runs(
    gh_settings, github_api, same_repo_pr
):
    repo, number, head = same_repo_pr
    _ask(gh_settings, github_api, number, login="reader")
    assert _queued(gh_settings) == []
    [reply] = _replies(repo, number)
    assert "Sorry, not running `/repairbot apply-fix`: @reader has `read` access" in reply
    assert repo.sha(f"refs/heads/{FEATURE}") == head
    assert _audit(gh_settings) == [("reader", "apply-fix", "refused", None)]


def test_a_closed_pr_is_refused_by_the_work(gh_settings, github_api, same_repo_pr):
    repo, number, head = same_repo_pr
    _ask(gh_settings, github_api, number)
    repo.pulls[number]["state"] = "closed"
    assert _work(gh_settings) == ["refused"]
    assert "this PR is closed" in _replies(repo, number)[0]
    assert repo.sha(f"refs/heads/{FEATURE}") == head


def test_bot_lines_on_a_pr_that_is_not_ours_stay_the_repositorys_ci_bots(
    gh_settings, github_api, same_repo_pr
):
    repo, number, head = same_repo_pr
    _ask(gh_settings, github_api, number, text="/bot apply-fix")
    _ask(gh_settings, github_api, number, text="/bot run\n/repairbot help", login="reader")
    assert _queued(gh_settings) == []
    [listing] = _replies(repo, number)  # only the /repairbot line was ours
    assert "usage: /repairbot [-h] {apply-fix,unsuppress,opt-out,opt-in} ..." in listing
    assert "- `/repairbot apply-fix`: fix every contract violation" in listing
    assert [a[2] for a in _audit(gh_settings)] == ["ignored", "help"]
    assert repo.sha(f"refs/heads/{FEATURE}") == head


HOSTILE = [
    ("/repairbot apply-fix $(rm -rf /)", "unrecognized arguments"),
    ("/repairbot apply-fix; rm -rf ~", "invalid choice: 'apply-fix;'"),
    ("/repairbot apply-fix `reboot` | sh", "unrecognized arguments"),
    ("/repairbot apply-fix " + "x" * 10_000, "at most 1000 are read"),
    ("/repairbot apply-fix \x00", "U+0000"),
    ("/repairbot apply-fix \u202e--force", "U+202E"),
]


@pytest.mark.parametrize(("text", "message"), HOSTILE, ids=[h[1] for h in HOSTILE])
def test_hostile_text_after_the_prefix_is_invalid_and_runs_nothing(
    gh_settings, github_api, same_repo_pr, text, message
):
    repo, number, head = same_repo_pr
    _ask(gh_settings, github_api, number, text=text)
    assert _queued(gh_settings) == []
    [reply] = _replies(repo, number)
    assert message in reply and "usage: /repairbot" in reply
    assert [r["content"] for r in repo.reactions] == ["confused"]
    assert [a[2] for a in _audit(gh_settings)] == ["invalid"]
    assert repo.sha(f"refs/heads/{FEATURE}") == head


def test_the_prefix_is_a_setting(gh_settings, github_api, same_repo_pr, task_settings):
    _repo, number, _head = same_repo_pr
    settings = task_settings(gh_settings.model_copy(update={"command_prefix": "/rb"}))
    _ask(settings, github_api, number, text="/repairbot apply-fix")  # not a command here
    comment = _ask(settings, github_api, number, text="/rb apply-fix")
    assert _queued(settings) == [[_audit_id(settings), comment]]
    assert _audit(settings) == [("writer", "apply-fix", "queued", None)]


def _audit_id(settings) -> int:
    with session_scope(settings.resolved_database_url) as session:
        return session.scalars(select(CommandInvocation.id)).one()


def test_a_remote_that_cannot_be_reached_is_answered_after_the_retries(
    gh_settings, github_api, same_repo_pr, task_settings, tmp_path
):
    repo, number, head = same_repo_pr
    nowhere = f"file://{tmp_path}/nowhere/{{repository}}.git"
    settings = task_settings(gh_settings.model_copy(update={"github_git_url_template": nowhere}))
    _ask(settings, github_api, number)
    assert _work(settings) == ["error"]
    [reply] = _replies(repo, number)
    assert reply.startswith("@writer gave up after repeated failures to reach git or GitHub")
    assert str(tmp_path) not in reply  # our paths stay in the audit row
    assert _audit(settings) == [("writer", "apply-fix", "error", None)]
    with session_scope(settings.resolved_database_url) as session:
        assert "git fetch failed" in session.scalars(select(CommandInvocation.reply)).one()
    assert repo.sha(f"refs/heads/{FEATURE}") == head
