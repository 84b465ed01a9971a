"""The fan-out notice obeys a PR's opt-out (``bot.db.records.opt_outs``): a PR that opted out after its
failure was noticed gets no comment, and nothing is posted until it opts in again."""

from __future__ import annotations

from bot.db.records.opt_outs import OptOutVia, lift, opt_out
from bot.db.session import session_scope
from bot.pipeline.fan_out.task import sync_notice
from tests.bot.conftest import REPO
from tests.bot.pipeline.fan_out.test_task import _human_pull, _notice


def test_an_opted_out_pr_gets_no_notice_until_it_opts_in(gh_settings, github_api, target):
    repo, head = target
    number = _human_pull(github_api, repo, head, "alice/feature")
    notice = _notice(gh_settings, head, number)
    where = {"repository": REPO, "pr_number": number, "via": OptOutVia.COMMAND, "by": "alice"}
    with session_scope(gh_settings.resolved_database_url) as session:
        opt_out(session, **where)
    assert sync_notice(gh_settings, notice) == "nothing to write"
    assert repo.comments.get(number, []) == []
    with session_scope(gh_settings.resolved_database_url) as session:
        lift(session, **where)
    assert sync_notice(gh_settings, notice) == "posted"
    assert len(repo.comments[number]) == 1
