"""The bot never approves or merges its own PR: against the GitHub double, a contract review of
a PR the bot opened posts nothing, one of a human's PR is a COMMENT; and no code in ``bot/``
can approve, request changes or call a merge endpoint at all."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from bot.forges.github.api import GitHubApi
from bot.forges.github.reviews import REVIEW_EVENT, sync_contract_review
from tests.bot.conftest import REPO
from tests.bot.forges.github.test_reviews import ADDED, BASE, _plan, _source
from tests.fakes.github_reviews import reviews_of

SQLITE = pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
BOT = Path(__file__).resolve().parents[4] / "bot"
# A merge endpoint (GitHub's .../pulls/N/merge, GitLab's .../merge_requests/N/merge), not
# GitLab's merge request paths and refs (/merge_requests, refs/merge-requests/N/head).
MERGE_PATH = re.compile(r"/merge(?![-_])")


def _pull(github_api, tmp_path: Path, login: str) -> int:
    source = _source(tmp_path, {"pkg/workers.py": BASE}, {"pkg/workers.py": BASE + ADDED})
    github_api.create_repo(REPO, source)
    return github_api.open_pull(REPO, head="alice/feature", title="[None][fix] x", login=login)


@SQLITE
def test_a_review_of_our_own_pr_is_never_posted(gh_settings, github_api, tmp_path) -> None:
    number = _pull(github_api, tmp_path, gh_settings.github_bot_login)
    plan = _plan(github_api, tmp_path, number)
    assert not plan.clean  # there is something a review would say
    said = sync_contract_review(GitHubApi(gh_settings), REPO, number, plan)
    assert said.startswith(f"not reviewing #{number}: it is repairbot's own PR")
    assert reviews_of(github_api, REPO, number) == []
    assert github_api.calls_to("POST", r"/reviews$") == []


@SQLITE
def test_a_review_of_a_humans_pr_is_a_comment(gh_settings, github_api, tmp_path) -> None:
    number = _pull(github_api, tmp_path, "alice")
    plan = _plan(github_api, tmp_path, number)
    sync_contract_review(GitHubApi(gh_settings), REPO, number, plan)
    [call] = github_api.calls_to("POST", r"/reviews$")
    assert REVIEW_EVENT == "COMMENT" and call.body["event"] == "COMMENT"
    [review] = reviews_of(github_api, REPO, number)
    assert review["state"] == "COMMENTED"


def _findings(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        words = node.value if isinstance(node, ast.Constant) else None
        if isinstance(words, str) and (
            words in ("APPROVE", "REQUEST_CHANGES") or MERGE_PATH.search(words)
        ):
            found.append(f"{node.lineno}: {words!r}")
        if isinstance(node, ast.Attribute) and node.attr in ("merge", "create_review_request"):
            found.append(f"{node.lineno}: .{node.attr}")
    return found


def test_no_code_in_the_bot_can_approve_or_merge() -> None:
    # PyGithub merges with PullRequest.merge (PUT .../pulls/N/merge) and approves with
    # create_review(event="APPROVE"): neither the call nor the words appear anywhere in bot/.
    offending = {
        str(path.relative_to(BOT)): hits
        for path in sorted(BOT.rglob("*.py"))
        if (hits := _findings(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert offending == {}


def test_the_scan_would_see_an_approval_or_a_merge() -> None:
    planted = 'pull.create_review(event="APPROVE")\npull.merge()\nx = "/repos/a/b/pulls/1/merge"\n'
    planted += 'y = f"/projects/{p}/merge_requests/{iid}/merge"\nz = "/merge_requests/7"\n'
    assert len(_findings(ast.parse(planted))) == 4
