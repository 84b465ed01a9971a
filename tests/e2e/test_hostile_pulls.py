"""Hostile PRs against the pre-merge contract check and the commands, end to end (issue 34):
``repairbot serve`` (embedded worker) receiving signed webhooks, the GitHub double, real forks.

One service, one repository whose ``main`` has the contract (and, set by its maintainers, a
raised per-file cap), and strangers' fork PRs: one brings its own ``.repairbot.toml`` to
exclude its violation, one points 40 paths at one 3 MB blob (the check's write budget holds),
one names its file to inject Markdown and a team mention, one is reviewed first by a stranger
whose review carries the bot's marker. A maintainer quoting a command in a code block runs
nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from bot.forges.github.review_text import marker
from tests.bot.pipeline.pr_repos import CONTRACT, PRE_CONTRACT, commit, new_repo, worker
from tests.e2e.conftest import github_service, wait_for
from tests.fakes.github_api import BOT_LOGIN, FakeGitHub
from tests.fakes.github_forks import fork, open_fork_pull
from tests.fakes.github_reviews import add_review, reviews_of

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO = "acme/spec"
BUDGET = 20 * 1024 * 1024
HOSTILE_PATH = "spec/x`y @acme/security-team [go](evil.invalid) <img src=x>.py"


@pytest.fixture
def story(make_service, github_api, tmp_path):
    source, pre = new_repo(tmp_path / "source", PRE_CONTRACT)
    repo = github_api.create_repo(REPO, source)
    repo.permissions.update({"maintainer": "write"})
    main = commit(
        repo.path,
        "main",
        {**CONTRACT, ".repairbot.toml": "max_file_bytes = 8388608\n"},
        parent=pre,
        message="the contract; larger files allowed",
    )
    service = github_service(
        make_service,
        github_api,
        import_spares="0",
        contract_check_max_write_bytes=str(BUDGET),
    )
    return service, main


def _fork_pull(github_api: FakeGitHub, owner: str, main: str, files: dict[str, str | None]):
    forked = fork(github_api, REPO, owner)
    head = commit(forked.path, "feature", files, parent=main, message=f"work by {owner}")
    number = open_fork_pull(
        github_api, forked, branch="feature", title="[None][feat] x", maintainer_can_modify=False
    )
    return number, head


def _opened(service, github_api: FakeGitHub, number: int) -> None:
    payload = github_api.pull_request_event(REPO, number, "opened")
    service.webhook("pull_request", payload, f"opened-{number}")


def _status(github_api: FakeGitHub, sha: str) -> dict | None:
    found = [s for s in github_api.repos[REPO].statuses if s["sha"] == sha]
    return found[-1] if found else None


def _live_html(markdown: str) -> str:
    """What GitHub would render outside code: where a mention, link or tag would be live."""
    html = MarkdownIt("commonmark").render(markdown)
    return re.sub(r"<code[^>]*>.*?</code>", "", html, flags=re.DOTALL)


def test_hostile_fork_prs_get_the_bases_rules_a_budget_and_inert_text(
    story, github_api, tmp_path: Path
):
    service, main = story
    bad = {"spec/ngram.py": worker("NGramWorker")}
    hidden, hidden_head = _fork_pull(
        github_api, "mallory", main, {**bad, ".repairbot.toml": 'exclude = ["spec/*"]\n'}
    )
    blob = "X = 1\n" + "# padding\n" * 300_000
    huge, huge_head = _fork_pull(
        github_api, "trudy", main, {f"gen/m{i:02}.py": blob for i in range(40)}
    )
    named, named_head = _fork_pull(github_api, "eve", main, {HOSTILE_PATH: worker("EveWorker")})
    spoofed, spoofed_head = _fork_pull(github_api, "oscar", main, bad)
    add_review(github_api, REPO, spoofed, "oscar", marker(spoofed_head, "0" * 16, "open"), main)
    for number in (hidden, huge, named, spoofed):
        _opened(service, github_api, number)
    for head in (hidden_head, huge_head, named_head, spoofed_head):
        wait_for(f"the status of {head[:12]}", lambda h=head: _status(github_api, h), service.logs)

    # The PR's own .repairbot.toml did not hide its violation; the status says why.
    hidden_status = _status(github_api, hidden_head)
    assert hidden_status["state"] == "failure", hidden_status
    assert "checked with the base's .repairbot.toml" in hidden_status["description"]
    # 40 x 3 MB (allowed per file by the base) is over the check's budget: an error, unwritten.
    huge_status = _status(github_api, huge_head)
    assert huge_status["state"] == "error" and "over the check's budget" in huge_status[
        "description"]  # fmt: skip
    trees = service.data_dir / "contract-trees"
    assert sum(p.stat().st_blocks * 512 for p in trees.rglob("*")) < BUDGET
    with service.client() as client:
        metrics = client.get("/metrics").text
    assert 'repairbot_contract_check_written{stat="max",unit="bytes"}' in metrics
    # The hostile path: the review names it, inertly.
    assert _status(github_api, named_head)["state"] == "failure"
    [review] = reviews_of(github_api, REPO, named)
    assert "EveWorker" in review["body"] and "@acme/security-team" in review["body"]
    live = _live_html(review["body"])
    assert "@acme" not in live and "evil.invalid" not in live and "<img" not in live
    # The stranger's review carrying our marker: the status is set, our own review posted.
    assert _status(github_api, spoofed_head)["state"] == "failure"
    authors = [r["user"]["login"] for r in reviews_of(github_api, REPO, spoofed)]
    assert authors == ["oscar", BOT_LOGIN]


def test_a_command_quoted_in_a_code_block_runs_nothing(story, github_api):
    service, main = story
    number, _ = _fork_pull(github_api, "mallory", main, {"README.md": "# x\n"})
    fenced = "To fix it, a maintainer would say:\n```\n/repairbot apply-fix\n```\n> /repairbot help"
    payload = github_api.comment_event(REPO, number, fenced, login="maintainer")
    service.webhook("issue_comment", payload, "fenced")
    plain = github_api.comment_event(REPO, number, "/repairbot help", login="maintainer")
    service.webhook("issue_comment", plain, "plain")

    def replies() -> list[str]:
        return [
            c["body"]
            for c in github_api.repos[REPO].comments[number]
            if c["user"]["login"] == BOT_LOGIN
        ]

    wait_for("the reply to the plain command", replies, service.logs)  # handled in order
    assert len(replies()) == 1
    reacted = {r["comment_id"] for r in github_api.repos[REPO].reactions}
    assert payload["comment"]["id"] not in reacted
