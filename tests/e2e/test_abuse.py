"""No stranger can stall, spam or steer the bot (issue 36), end to end: ``repairbot serve`` with
its embedded worker, the GitHub double, signed webhooks, on SQLite and PostgreSQL.

A stranger posts 120 ``/repairbot help`` comments on someone else's PR while the GitHub write
budget is spent, and ordinary deliveries and CI posts keep arriving. Every delivery is answered
and stored and every one is processed; the stranger gets one reply (the rest are recorded,
withheld); the intake never waits on GitHub (no 5xx, no "database is locked"). The figure for
the intake's latency under that load is bench/abuse.py's (a test asserts no wall-clock time).
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from markdown_it import MarkdownIt
from sqlalchemy import create_engine, text

from bot.cli.demo_target import build_target
from bot.intake.webhook_auth import sign
from tests.conftest import CI_TOKEN, SECRET
from tests.e2e.conftest import github_service, wait_for
from tests.fakes.github_api import BOT_LOGIN
from tests.fakes.github_git import git_out

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO = "acme/trt"
SPAM = 120
ORDINARY = 40


def _signed(service, event: str, payload: dict, delivery: str) -> int:
    body = json.dumps(payload).encode()
    answer = httpx.post(
        f"{service.url}/webhooks/github",
        content=body,
        timeout=60,
        headers={
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery,
            "Content-Type": "application/json",
            "X-Hub-Signature-256": sign(SECRET.encode(), body),
        },
    )
    return answer.status_code


def _ci_post(service, build: int) -> int:
    answer = httpx.post(
        f"{service.url}/api/v1/ci-failures",
        params={"pipeline": "nightly", "build_number": build, "repository": REPO},
        content=b"everything passed\n",
        headers={"Authorization": f"Bearer {CI_TOKEN}", "Content-Type": "text/plain"},
        timeout=60,
    )
    return answer.status_code


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_comment_spam_with_the_write_budget_spent_loses_nothing(
    make_service, github_api, tmp_path, request, database
):
    source = tmp_path / "target"
    head = build_target(source)
    repo = github_api.create_repo(REPO, source)
    git_out(repo.path, "branch", "feature", head)
    number = github_api.open_pull(REPO, head="feature", title="[None][feat] f", login="alice")
    settings = {"github_writes_per_minute": "1", "import_spares": "0"}
    if database == "postgresql":
        settings["database_url"] = request.getfixturevalue("postgres_url")
    service = github_service(make_service, github_api, **settings)
    spam = [github_api.comment_event(REPO, number, "/repairbot help", login="mallory")
            for _ in range(SPAM)]  # fmt: skip
    ordinary = {"action": "opened", "issue": {"number": 1}, "repository": {"full_name": REPO}}

    def send(i: int) -> int:
        if i % 4 == 3 and i // 4 < ORDINARY:
            return _ci_post(service, i) if i % 8 == 7 else _signed(
                service, "issues", ordinary, f"ordinary-{i}")  # fmt: skip
        return _signed(service, "issue_comment", spam[i % SPAM], f"spam-{i}")

    with ThreadPoolExecutor(max_workers=16) as pool:
        codes = list(pool.map(send, range(SPAM + ORDINARY)))
    assert set(codes) <= {200, 202}, codes

    url = settings.get("database_url") or f"sqlite:///{service.data_dir / 'repairbot.db'}"
    engine = create_engine(url)

    def unprocessed() -> int:
        with engine.connect() as connection:
            return int(connection.execute(text(
                "SELECT count(*) FROM deliveries WHERE source = 'github' AND outcome = 'stored'"
            )).scalar_one())  # fmt: skip

    wait_for("every delivery processed", lambda: unprocessed() == 0, service.logs, 300)
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT answered, withheld FROM command_invocations WHERE author = 'mallory'")
        ).all()
        stored = connection.execute(text("SELECT count(*) FROM deliveries")).scalar_one()
    engine.dispose()
    assert len(rows) == SPAM and sum(1 for answered, _ in rows if answered) == 1
    assert all(withheld for answered, withheld in rows if not answered)
    assert stored >= SPAM + ORDINARY  # every delivery and CI post (and the posts' bodies)

    def replies() -> list[dict]:
        return [c for c in repo.comments.get(number, []) if c["user"]["login"] == BOT_LOGIN]

    # The one reply is a deferred write, sent by its task once a slot under the cap frees.
    wait_for("the one reply", replies, service.logs, 150)
    assert len(replies()) == 1
    assert "database is locked" not in service.logs()


def _setup_pull(github_api, tmp_path) -> tuple[object, int, str]:
    source = tmp_path / "target"
    head = build_target(source)
    repo = github_api.create_repo(REPO, source)
    git_out(repo.path, "branch", "feature", head)
    number = github_api.open_pull(REPO, head="feature", title="[None][feat] f", login="alice")
    return repo, number, head


def _unprocessed(service) -> int:
    engine = create_engine(f"sqlite:///{service.data_dir / 'repairbot.db'}")
    try:
        with engine.connect() as connection:
            return int(connection.execute(text(
                "SELECT count(*) FROM deliveries WHERE source = 'github' AND outcome = 'stored'"
            )).scalar_one())  # fmt: skip
    finally:
        engine.dispose()


def test_echoed_text_never_pings_and_a_strangers_invalid_command_gets_a_reaction(
    make_service, github_api, tmp_path
):
    repo, number, _head = _setup_pull(github_api, tmp_path)
    repo.permissions["writer"] = "write"
    service = github_service(make_service, github_api, import_spares="0")
    hostile = "/repairbot apply-fix @acme/security-team"
    for i, login in enumerate(("mallory", "writer")):
        event = github_api.comment_event(REPO, number, hostile, login=login)
        assert _signed(service, "issue_comment", event, f"mention-{i}") in {200, 202}

    def replies() -> list[dict]:
        return [c for c in repo.comments.get(number, []) if c["user"]["login"] == BOT_LOGIN]

    wait_for("the collaborator's reply", replies, service.logs, 120)
    wait_for("the stranger's reaction", lambda: repo.reactions, service.logs, 120)
    [reply] = replies()  # the collaborator's; the stranger's invalid command got no comment
    assert {r["content"] for r in repo.reactions} == {"confused"}
    html = MarkdownIt("commonmark").render(reply["body"])
    outside_code = re.sub(r"<code[^>]*>.*?</code>", "", html, flags=re.DOTALL)
    assert "@acme/security-team" in reply["body"] and "@acme" not in outside_code


def _checks_of(service, number: int) -> int:
    engine = create_engine(f"sqlite:///{service.data_dir / 'repairbot.db'}")
    try:
        with engine.connect() as connection:
            return int(connection.execute(
                text("SELECT count(*) FROM contract_checks WHERE number = :n"), {"n": number}
            ).scalar_one())  # fmt: skip
    finally:
        engine.dispose()


def _check_once(service, github_api, event: dict, deliveries: int, prefix: str) -> None:
    """Send ``deliveries`` copies of ``event`` and wait for them and the one check's record.

    Its status is not waited for: the two PRs of the test share one head, and a status GitHub
    already shows on that head and context is not POSTed again (bot.forges.github.statuses).
    """

    def send(i: int) -> int:
        return _signed(service, "pull_request", event, f"{prefix}-{i}")

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert set(pool.map(send, range(deliveries))) <= {200, 202}
    wait_for("the deliveries processed", lambda: _unprocessed(service) == 0, service.logs, 300)
    number = int(event["number"])
    wait_for("the check recorded", lambda: _checks_of(service, number) == 1, service.logs, 300)


def test_a_synchronize_flood_of_one_head_costs_what_one_delivery_costs(
    make_service, github_api, tmp_path
):
    repo, number, head = _setup_pull(github_api, tmp_path)
    git_out(repo.path, "branch", "other", head)
    single = github_api.open_pull(REPO, head="other", title="[None][feat] g", login="alice")
    service = github_service(make_service, github_api, import_spares="0")

    def reads(pull: int) -> int:
        return len(github_api.calls_to("GET", rf"/pulls/{pull}$"))

    # One delivery, one check: what GitHub is asked for one head.
    _check_once(service, github_api, github_api.pull_request_event(REPO, single, "synchronize"),
                1, "single")  # fmt: skip
    wait_for("the check's status", lambda: github_api.calls_to("POST", r"/statuses/"),
             service.logs, 300)  # fmt: skip
    statuses = len(github_api.calls_to("POST", r"/statuses/"))
    # 200 deliveries of one head: one check, and not one REST call more.
    event = github_api.pull_request_event(REPO, number, "synchronize")
    _check_once(service, github_api, event, 200, "flood")
    assert reads(number) == reads(single) >= 1
    # The flood's head is the single PR's: its status is on GitHub already, not POSTed again.
    assert len(github_api.calls_to("POST", r"/statuses/")) == statuses
    # The same head again, once answered: no REST call, no check at all.
    for i in range(20):
        assert _signed(service, "pull_request", event, f"again-{i}") in {200, 202}
    wait_for("the repeats processed", lambda: _unprocessed(service) == 0, service.logs, 120)
    assert reads(number) == reads(single)
    assert len(github_api.calls_to("POST", r"/statuses/")) == statuses
