"""Reply budgets against the GitHub double, through real deliveries: a stranger spamming
commands gets one answer per PR per hour, the rest are recorded and withheld; an invalid
command from a stranger gets a reaction at most; echoed words never ping anyone; collaborators
are budgeted per author, per PR and per repository."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from sqlalchemy import select

from bot.db.models import CommandInvocation
from bot.db.session import session_scope
from tests.bot.commands.test_dispatch_end_to_end import _replies, _say
from tests.fakes.github_api import BOT_LOGIN


def _rows(settings) -> list[tuple[str, str, bool, str | None]]:
    with session_scope(settings.resolved_database_url) as session:
        return [
            (row.author, row.outcome, row.answered, row.withheld)
            for row in session.scalars(select(CommandInvocation).order_by(CommandInvocation.id))
        ]


def _bot_writes(github_api) -> int:
    return len(github_api.calls_to("POST", r"/comments$|/reactions$"))


def test_a_strangers_spam_gets_one_answer_per_pr_per_hour(gh_settings, github_api, fix_pr):
    repo, number, _fix, _head = fix_pr
    for _ in range(6):
        _say(gh_settings, github_api, number, "/repairbot help", login="mallory")
    assert len(_replies(repo, number)) == 1
    rows = _rows(gh_settings)
    assert [r[2] for r in rows] == [True] + [False] * 5  # all six recorded
    assert all(r[3] and "not a collaborator" in r[3] for r in rows[1:])
    # A collaborator on the same PR is answered all the same.
    _say(gh_settings, github_api, number, "/repairbot help", login="writer")
    assert len(_replies(repo, number)) == 2


def test_a_strangers_invalid_command_gets_a_reaction_and_no_echo(gh_settings, github_api, fix_pr):
    repo, number, _fix, _head = fix_pr
    _say(gh_settings, github_api, number, "/repairbot apply-fix @acme/security-team", "mallory")
    assert _replies(repo, number) == []
    assert [r["content"] for r in repo.reactions] == ["confused"]
    assert _rows(gh_settings)[0][:3] == ("mallory", "invalid", True)


def test_an_echoed_mention_stays_in_a_code_span(gh_settings, github_api, fix_pr):
    repo, number, _fix, _head = fix_pr
    _say(gh_settings, github_api, number, "/repairbot apply-fix @acme/security-team", "writer")
    [reply] = _replies(repo, number)
    assert "@acme/security-team" in reply
    html = MarkdownIt("commonmark").render(reply)
    outside = re.sub(r"<code[^>]*>.*?</code>", "", html, flags=re.DOTALL)
    assert "@acme" not in outside


def test_budgets_per_author_pr_and_repository(gh_settings, github_api, fix_pr, task_settings):
    repo, number, _fix, _head = fix_pr
    settings = task_settings(
        gh_settings.model_copy(
            update={"reply_budget_per_author_hour": 2, "reply_budget_per_pr_hour": 3}
        )
    )
    for login in ("writer", "writer", "writer", "admin", "admin"):
        _say(settings, github_api, number, "/repairbot help", login=login)
    answered = [(author, answered) for author, _, answered, _ in _rows(settings)]
    assert answered == [
        ("writer", True),
        ("writer", True),
        ("writer", False),  # the author's budget
        ("admin", True),
        ("admin", False),  # the PR's budget
    ]
    assert len([c for c in repo.comments[number] if c["user"]["login"] == BOT_LOGIN]) == 3
    assert _bot_writes(github_api) == 3  # help is answered by a reply alone
