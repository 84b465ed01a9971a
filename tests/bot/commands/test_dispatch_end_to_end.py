"""/bot commands end to end in-process: a signed webhook → stored delivery → the real
``process_delivery`` task → the fake GitHub (reply, reaction, status) and our database."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from bot.app import create_app
from bot.db.models import CommandInvocation, Verification
from bot.db.session import session_scope
from bot.intake.process_delivery import process_delivery
from bot.intake.webhook_auth import sign
from tests.bot.commands.drop_in import dropped_in
from tests.bot.conftest import REPO
from tests.conftest import SECRET
from tests.fakes.github_api import BOT_LOGIN
from tests.fakes.github_deliveries import send_pending_writes


def _deliver(settings, github_api, payload, delivery):
    body = json.dumps(payload).encode()
    headers = {
        "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": sign(SECRET.encode(), body),
        "Content-Type": "application/json",
    }
    with TestClient(create_app(settings)) as client:
        answer = client.post("/webhooks/github", content=body, headers=headers).json()
    process_delivery.apply(args=[answer["delivery_id"]]).get()
    send_pending_writes(settings)  # the replies and reactions it deferred, as a worker sends them
    return answer["delivery_id"]


def _say(settings, github_api, number, text, login="writer", user_type="User", delivery=None):
    payload = github_api.comment_event(REPO, number, text, login=login, user_type=user_type)
    return _deliver(settings, github_api, payload, delivery or f"d-{payload['comment']['id']}")


def _audit(settings):
    with session_scope(settings.resolved_database_url) as session:
        return [
            (a.author, a.command, a.outcome)
            for a in session.scalars(select(CommandInvocation).order_by(CommandInvocation.id))
        ]


def _verifications(settings):
    with session_scope(settings.resolved_database_url) as session:
        return [
            (v.state, v.requested_queue, v.options.get("stage_list"))
            for v in session.scalars(select(Verification).order_by(Verification.id))
        ]


def _replies(repo, number):
    return [
        c["body"]
        for c in repo.comments[number]
        if c["user"]["login"] == BOT_LOGIN and c["body"].startswith("@")
    ]


def test_run_then_kill_by_a_writer(gh_settings, github_api, fix_pr):
    repo, number, _fix_id, _head = fix_pr
    _say(
        gh_settings,
        github_api,
        number,
        '/bot run --gpu-type H100_PCIe --stage-list "H100_PCIe-PyTorch-1"',
    )
    assert _verifications(gh_settings) == [("queued", "gpu.H100_PCIe", ["H100_PCIe-PyTorch-1"])]
    assert [r["content"] for r in repo.reactions] == ["+1"]
    assert "queued on `gpu.H100_PCIe`" in _replies(repo, number)[-1]
    _say(gh_settings, github_api, number, "/bot kill", login="admin")
    assert [v[0] for v in _verifications(gh_settings)] == ["cancelled"]
    assert "Stopped verification #" in _replies(repo, number)[-1]
    assert _audit(gh_settings) == [("writer", "run", "accepted"), ("admin", "kill", "accepted")]


@pytest.mark.parametrize(
    ("login", "allow", "outcome", "reply"),
    [
        ("reader", [], "refused", "commands need write or admin"),
        ("stranger", [], "refused", "has `none` access"),
        ("ghost-user", [], "refused", "has `none` access"),
        ("reader", ["Reader"], "accepted", "queued on"),  # the allow-list, case-insensitive
    ],
)
def test_authorisation_uses_the_permission_endpoint_and_the_allow_list(
    gh_settings, github_api, fix_pr, login, allow, outcome, reply, task_settings
):
    repo, number, _, _ = fix_pr
    settings = gh_settings.model_copy(update={"github_command_users": allow})
    task_settings(settings)  # replaces fix_pr's
    _say(settings, github_api, number, "/bot run", login=login)
    assert _audit(settings) == [(login, "run", outcome)]
    assert reply in _replies(repo, number)[-1]
    assert len(_verifications(settings)) == (1 if outcome == "accepted" else 0)


@pytest.mark.parametrize(
    ("text", "login", "user_type", "outcome", "replied"),
    [
        ('/bot run --stage-list "$(rm -rf /)"', "writer", "User", "invalid", True),
        ("/bot run " + "--debug " * 1300, "writer", "User", "invalid", True),
        ("/bot run --stage-list A10\u202e", "writer", "User", "invalid", True),
        ("/bot help", "reader", "User", "help", True),
        ("/bot run", "renovate[bot]", "Bot", "ignored", False),
        ("/bot run", "repairbot[bot]", "Bot", "ignored", False),
    ],
    ids=["shell-substitution", "10KB", "rtl-override", "help", "other-bot", "ourselves"],
)
def test_bad_commands_and_bots_run_nothing(
    gh_settings, github_api, fix_pr, text, login, user_type, outcome, replied
):
    repo, number, _, _ = fix_pr
    _say(gh_settings, github_api, number, text, login=login, user_type=user_type)
    assert [a[2] for a in _audit(gh_settings)] == [outcome]
    assert _verifications(gh_settings) == []
    replies = _replies(repo, number)
    assert bool(replies) == replied
    if outcome == "invalid":
        assert "usage: /bot" in replies[-1]
        assert [r["content"] for r in repo.reactions] == ["confused"]


def test_skip_records_the_reason_and_sets_the_status(gh_settings, github_api, fix_pr):
    repo, number, _, head = fix_pr
    _say(
        gh_settings, github_api, number, '/bot skip --comment "runner pool down, verified by hand"'
    )
    assert [(s["sha"], s["state"], s["context"], s["description"]) for s in repo.statuses] == [
        (head, "success", "repairbot/verify", "skipped: runner pool down, verified by hand")
    ]
    assert _audit(gh_settings) == [("writer", "skip", "accepted")]


def test_reuse_pipeline_without_a_verification_says_so(gh_settings, github_api, fix_pr):
    repo, number, _, _ = fix_pr
    _say(gh_settings, github_api, number, "/bot reuse-pipeline")
    assert "Nothing to reuse" in _replies(repo, number)[-1]
    assert repo.statuses == []


def test_redelivery_and_edits_and_other_prs_do_nothing_twice(gh_settings, github_api, fix_pr):
    repo, number, _, _ = fix_pr
    payload = github_api.comment_event(REPO, number, "/bot run", login="writer")
    _deliver(gh_settings, github_api, payload, "same-delivery")
    _deliver_again = json.dumps(payload).encode()
    with TestClient(create_app(gh_settings)) as client:
        again = client.post(
            "/webhooks/github",
            content=_deliver_again,
            headers={
                "X-GitHub-Event": "issue_comment",
                "X-GitHub-Delivery": "same-delivery",
                "X-Hub-Signature-256": sign(SECRET.encode(), _deliver_again),
            },
        ).json()
    assert again["status"] == "duplicate"
    edited = {**payload, "action": "edited"}
    _deliver(gh_settings, github_api, edited, "edit-1")
    human = github_api.open_pull(REPO, head="repairbot/c/1", title="not ours")
    _say(gh_settings, github_api, human, "/bot run")
    assert len(_replies(repo, number)) == 1 and len(_verifications(gh_settings)) == 1
    assert _replies(repo, human) == []
    assert [a[2] for a in _audit(gh_settings)] == ["accepted", "ignored"]


def test_a_command_module_dropped_into_the_package_runs_with_no_other_edit(
    gh_settings, github_api, fix_pr, tmp_path
):
    """One new file in bot/commands is a command: parsed, authorised, run, audited, in help."""
    repo, number, _, _ = fix_pr
    with dropped_in(tmp_path):
        _say(gh_settings, github_api, number, "/bot ping --times 2")
        _say(gh_settings, github_api, number, "/bot ping", login="reader")
        _say(gh_settings, github_api, number, "/bot help", login="reader")
        _say(gh_settings, github_api, number, "/bot ping --times many")
    pong, refused, listing, invalid = _replies(repo, number)
    assert pong.startswith("@writer pong pong for @writer\n")
    assert "Sorry, not running `/bot ping`: @reader has `read` access" in refused
    assert "{run,kill,skip,reuse-pipeline,ping}" in listing
    assert "- `/bot ping`: answer pong" in listing
    assert "invalid int value: 'many'" in invalid and "usage: /bot ping" in invalid
    assert [r["content"] for r in repo.reactions] == ["+1", "confused"]
    assert _audit(gh_settings) == [
        ("writer", "ping", "accepted"),
        ("reader", "ping", "refused"),
        ("reader", "help", "help"),
        ("writer", None, "invalid"),
    ]
    with session_scope(gh_settings.resolved_database_url) as session:
        arguments = [a.arguments for a in session.scalars(select(CommandInvocation))]
    assert arguments[0] == {"times": 2}
