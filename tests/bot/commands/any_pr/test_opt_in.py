"""``/repairbot opt-in`` through signed deliveries: the author or a maintainer lifts the
command's opt-out (who and when kept), a stranger is refused, and a label opt-out still holds."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from bot.db.records.opt_outs import OptOutVia, PrOptOut, opt_out
from bot.db.session import session_scope
from tests.bot.commands.any_pr.test_opt_out import _rows, human_pr
from tests.bot.commands.test_dispatch_end_to_end import _replies, _say
from tests.bot.conftest import REPO

__all__ = ["human_pr"]  # the fixture, shared with the opt-out tests


def _opted_out_by(settings, number: int, via: OptOutVia, login: str = "alice") -> None:
    with session_scope(settings.resolved_database_url) as session:
        opt_out(session, repository=REPO, pr_number=number, via=via, by=login)


@pytest.mark.parametrize(
    ("login", "lifted", "said"),
    [
        ("alice", True, "Opted in again (the opt-out by alice lifted)"),
        ("maintainer", True, "the next failure of #"),
        ("eve", False, "Sorry, not running `/repairbot opt-in`: not the PR's author"),
    ],
)
def test_who_may_opt_a_pr_in(gh_settings, github_api, human_pr, login, lifted, said):
    repo, number = human_pr
    _opted_out_by(gh_settings, number, OptOutVia.COMMAND)
    _say(gh_settings, github_api, number, "/repairbot opt-in", login=login)
    assert _rows(gh_settings) == [(number, "command", "alice", login if lifted else None)]
    assert said in _replies(repo, number)[-1]
    with session_scope(gh_settings.resolved_database_url) as session:
        row = session.scalars(select(PrOptOut)).one()
        assert (row.lifted_at is not None) is lifted


def test_nothing_to_lift_says_so(gh_settings, github_api, human_pr):
    repo, number = human_pr
    _say(gh_settings, github_api, number, "/repairbot opt-in", login="alice")
    assert "Nothing to lift: #" in _replies(repo, number)[-1]


def test_the_label_still_holds_and_the_reply_says_so(gh_settings, github_api, human_pr):
    repo, number = human_pr
    _opted_out_by(gh_settings, number, OptOutVia.COMMAND)
    _opted_out_by(gh_settings, number, OptOutVia.LABEL, login="maintainer")
    _say(gh_settings, github_api, number, "/repairbot opt-in", login="alice")
    assert _rows(gh_settings) == [
        (number, "command", "alice", "alice"),
        (number, "label", "maintainer", None),
    ]
    assert "The `repairbot:opt-out` label opts it out too" in _replies(repo, number)[-1]
