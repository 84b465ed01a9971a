"""``/repairbot opt-out`` through signed ``issue_comment`` deliveries and the real
``process_delivery``, table-driven: the PR's author and a maintainer may, a stranger is refused
with the reason, hostile lines are refused by the grammar, and nothing else changes."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from bot.db.models import CommandInvocation
from bot.db.records.opt_outs import PrOptOut
from bot.db.session import session_scope
from tests.bot.commands.test_dispatch_end_to_end import _replies, _say
from tests.bot.conftest import REPO
from tests.fakes.github_git import git_out


@pytest.fixture
def human_pr(gh_settings, github_api, target, task_settings):
    """alice's PR on ``acme/trt``; a maintainer and a reader besides."""
    task_settings(gh_settings)
    repo, head = target
    git_out(repo.path, "branch", "alice/feature", head)
    repo.permissions.update({"maintainer": "write", "eve": "read"})
    return repo, github_api.open_pull(REPO, head="alice/feature", title="[None][feat] x")


def _rows(settings) -> list[tuple[int, str, str, str | None]]:
    with session_scope(settings.resolved_database_url) as session:
        return [
            (row.pr_number, row.via, row.opted_out_by, row.lifted_by)
            for row in session.scalars(select(PrOptOut).order_by(PrOptOut.id))
        ]


def _outcomes(settings) -> list[tuple[str, str | None, str]]:
    with session_scope(settings.resolved_database_url) as session:
        rows = session.scalars(select(CommandInvocation).order_by(CommandInvocation.id))
        return [(a.author, a.command, a.outcome) for a in rows]


CASES = [
    # (who, line, opted out?, audit outcome, what the reply says)
    ("alice", "/repairbot opt-out", True, "accepted", "Opted out: repairbot leaves #"),
    ("ALICE", "/repairbot opt-out", True, "accepted", "Recorded for @ALICE"),
    ("maintainer", "/repairbot opt-out", True, "accepted", "until `/repairbot opt-in`"),
    (
        "eve",
        "/repairbot opt-out",
        False,
        "refused",
        "Sorry, not running `/repairbot opt-out`: not the PR's author, and @eve has `read` access",
    ),
    ("stranger", "/repairbot opt-out", False, "refused", "@stranger has `none` access"),
    ("alice", "/repairbot opt-out --force", False, "invalid", "unrecognized arguments: --force"),
    ("alice", "/repairbot opt-out\u202e", False, "invalid", "invisible or control character"),
    ("alice", '/repairbot opt-out "unbalanced', False, "invalid", "cannot split the command"),
    ("alice", "/repairbot opt-out " + "x" * 1100, False, "invalid", "at most 1000 are read"),
]


@pytest.mark.parametrize(("login", "line", "opted", "outcome", "said"), CASES)
def test_who_may_opt_a_pr_out(gh_settings, github_api, human_pr, login, line, opted, outcome, said):
    repo, number = human_pr
    _say(gh_settings, github_api, number, line, login=login)
    rows = _rows(gh_settings)
    assert rows == ([(number, "command", login, None)] if opted else [])
    assert _outcomes(gh_settings) == [(login, "opt-out" if outcome != "invalid" else None, outcome)]
    with session_scope(gh_settings.resolved_database_url) as session:
        [audit] = session.scalars(select(CommandInvocation)).all()
        assert said in audit.reply, audit.reply
    if outcome == "invalid":  # not a collaborator: a reaction, never an echo of their words
        assert _replies(repo, number) == []
        assert [r["content"] for r in repo.reactions] == ["confused"]
    else:
        [reply] = _replies(repo, number)
        assert said in reply, reply


def test_a_second_opt_out_says_who_did_it_first(gh_settings, github_api, human_pr):
    repo, number = human_pr
    _say(gh_settings, github_api, number, "/repairbot opt-out", login="alice")
    _say(gh_settings, github_api, number, "/repairbot opt-out", login="maintainer")
    assert _rows(gh_settings) == [(number, "command", "alice", None)]
    assert f"Already opted out: {REPO}#{number} opted out by alice" in _replies(repo, number)[-1]


def test_a_bot_is_ignored(gh_settings, github_api, human_pr):
    _repo, number = human_pr
    _say(gh_settings, github_api, number, "/repairbot opt-out", login="ci[bot]", user_type="Bot")
    assert _rows(gh_settings) == []
    assert _outcomes(gh_settings) == [("ci[bot]", None, "ignored")]


def test_our_own_fix_pr_cannot_be_opted_out(gh_settings, github_api, fix_pr):
    repo, number, fix_id, _head = fix_pr
    _say(gh_settings, github_api, number, "/repairbot opt-out", login="writer")
    assert _rows(gh_settings) == []
    [reply] = _replies(repo, number)
    assert f"this is repairbot's own fix PR (fix #{fix_id}); close it" in reply
