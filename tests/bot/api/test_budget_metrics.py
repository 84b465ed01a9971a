"""``/metrics`` reports every budget and its use, from the database (SQLite and PostgreSQL)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from bot.app import create_app
from bot.db.models import CommandInvocation, utcnow
from bot.db.records.github_writes import GitHubWrite
from bot.db.session import session_scope


def _metric(text: str, line_start: str) -> float:
    [line] = [line for line in text.splitlines() if line.startswith(line_start)]
    return float(line.rsplit(" ", 1)[1])


def test_budgets_and_their_use(settings):
    with session_scope(settings.resolved_database_url) as session:
        for answered, withheld in ((True, None), (False, "reply budget spent"), (False, None)):
            session.add(
                CommandInvocation(
                    repository="acme/x", pr_number=1, author="m", text="/repairbot help",
                    outcome="help", answered=answered, withheld=withheld,
                )
            )  # fmt: skip
        session.add_all(
            [
                GitHubWrite(key="a", kind="comment", repository="acme/x", request={"n": 1}),
                GitHubWrite(key="b", kind="comment", repository="acme/x", request={}, error="403"),
                GitHubWrite(key="c", kind="status", repository="acme/x", slot_at=utcnow()),
            ]
        )
    with TestClient(create_app(settings)) as client:
        text = client.get("/metrics").text
    assert _metric(text, 'repairbot_budget{budget="reply_stranger_per_pr_hour"}') == 1
    assert _metric(text, 'repairbot_budget{budget="github_writes_per_minute"}') == 80
    for state in ("answered", "withheld", "none"):
        assert _metric(text, f'repairbot_command_answers_last_hour{{state="{state}"}}') == 1
    assert _metric(text, 'repairbot_github_writes{state="pending"}') == 1
    assert _metric(text, 'repairbot_github_writes{state="refused"}') == 1
    assert _metric(text, 'repairbot_github_writes{state="slots_last_minute"}') == 1
