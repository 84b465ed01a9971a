"""The loop guard end to end (issue 15): the served API, its worker and the GitHub double.

The bot opens its fix PR; the PR's own CI (triggered by the bot's push) fails again and posts
its report, naming our PR and its head. Every such report would make the bot act again — a
whole repair: a worktree, the sweep, the sandboxed import check, the base check — and the
first ``budget`` do, the count of acted-on events rising with each. Past the budget the bot
acts on nothing more for that PR this hour: each further run ends ``loop_guarded`` before any
work, with the reason, visible through the API and on the dashboard, and every event is a row.
The bot never reviews, approves or merges its own PR along the way.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from bot.cli.demo_target import wait_for_runs
from bot.db.records.bot_events import BotEvent
from bot.db.session import session_scope
from tests.e2e.conftest import github_service, post_pipeline_failure
from tests.e2e.test_github_stories import REPO, failing

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
__all__ = ["failing"]  # the fixture, shared with the GitHub stories
BUDGET = 3
AFTER_BUDGET = 2


def _post(client, console: bytes, build: int, head: str, pr: int | None = None) -> dict:
    return post_pipeline_failure(client, console, repository=REPO, build=build, head=head, pr=pr)


def _events(service) -> list[tuple[int, str, str, str]]:
    url = f"sqlite:///{(service.data_dir / 'repairbot.db').resolve()}"
    with session_scope(url) as session:
        rows = session.scalars(select(BotEvent).order_by(BotEvent.id))
        return [(r.pr_number, r.kind, r.event_key, r.outcome) for r in rows]


def test_the_bots_own_push_failing_again_stops_within_the_budget(make_service, github_api, failing):
    source, head, console = failing
    github_api.create_repo(REPO, source)
    service = github_service(
        make_service,
        github_api,
        bot_event_budget_per_pr_hour=str(BUDGET),
        verify_default_queue="nowhere",  # no verification runs beside the loop: nobody consumes
        verify_fallback_queues="[]",
    )
    with service.client() as client:
        first = wait_for_runs(client, _post(client, console, 1, head)["url"], timeout_s=180)
        assert [r["state"] for r in first["runs"]] == ["pr_opened"], service.logs()
        [pull] = github_api.pulls(REPO)
        ours, pushed = pull["number"], pull["head"]["sha"]  # the bot's own push
        assert _events(service) == []  # a human's failure: never counted

        runs = []
        for build in range(2, 2 + BUDGET + AFTER_BUDGET):
            report = wait_for_runs(
                client, _post(client, console, build, pushed, pr=ours)["url"], timeout_s=240
            )
            [run] = report["runs"]
            runs.append(run)
            acted = [e for e in _events(service) if e[3] == "acted"]
            # The count rises with each event (each one would make the bot act) up to the budget.
            assert len(acted) == min(build - 1, BUDGET), (build, _events(service), service.logs())
        page = client.get("/failures").text
        [fix] = client.get("/api/v1/fixes").json()
        fix_page = client.get(f"/fixes/{fix['id']}").text

    worked, guarded = runs[:BUDGET], runs[BUDGET:]
    for run in worked:  # acted on: a whole repair each time
        assert run["state"] != "loop_guarded", run
        assert "swept" in [t["to"] for t in run["transitions"]], run
    for run in guarded:  # past the budget: nothing done, the reason recorded
        assert run["state"] == "loop_guarded", run
        assert [t["to"] for t in run["transitions"]] == ["classified", "loop_guarded"], run
        assert f"{REPO}#{ours}" in run["reason"] and "caused by repairbot[bot]" in run["reason"]
        assert f"REPAIRBOT_BOT_EVENT_BUDGET_PER_PR_HOUR={BUDGET}" in run["reason"]
    events = _events(service)
    assert [e[3] for e in events] == ["acted"] * BUDGET + ["guarded"] * AFTER_BUDGET
    assert {(e[0], e[1]) for e in events} == {(ours, "ci_failure")}
    assert "loop guarded" in page and "loop guard: ci_failure" in page
    assert {run["fix_id"] for run in guarded} == {fix["id"]}  # shown on our fix's page too
    assert fix_page.count("Stopped by the loop guard") == AFTER_BUDGET

    # Through it all: one PR, never reviewed, approved or merged by the bot.
    assert len(github_api.pulls(REPO)) == 1
    assert len(github_api.calls_to("POST", r"/pulls$")) == 1
    assert github_api.calls_to("PUT", r"/merge$") == []
    assert github_api.calls_to("POST", r"/reviews$") == []
