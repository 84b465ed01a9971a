"""Autonomy and opt-outs (issue 15) end to end: the served API and its worker, the GitHub double,
real pushes. The repository's ``.repairbot.toml`` on ``main`` says ``report`` for the contract
signature: the failure is classified and nothing is opened. Switched to ``suggest``: one comment
with the fix's diff on the failing PR, and no PR. A PR carrying the opt-out label: nothing posted
for it. ``/repairbot opt-out`` by a PR's author: that PR's next failure opens and posts nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bot.cli.demo_target import wait_for_runs
from bot.git import commit_all, git
from tests.e2e.conftest import github_service, post_pipeline_failure
from tests.e2e.test_github_stories import REPO, _wait, failing
from tests.fakes.github_api import BOT_LOGIN
from tests.fakes.github_git import git_out

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
__all__ = ["failing"]  # the fixture, shared with the GitHub stories
SIGNATURE = "contract-forward-override"


@pytest.fixture
def service(make_service, github_api, failing):
    github_api.create_repo(REPO, failing[0])
    return github_service(make_service, github_api)


def _policy(github_api, tmp_path: Path, text: str) -> str:
    """Push ``text`` as ``.repairbot.toml`` to ``main``; the new head."""
    bare = github_api.repos[REPO].path
    checkout = tmp_path / f"policy-{len(list(tmp_path.glob('policy-*')))}"
    subprocess.run(["git", "clone", "--quiet", str(bare), str(checkout)], check=True)
    (checkout / ".repairbot.toml").write_text(text)
    head = commit_all(checkout, "repairbot policy")
    git(checkout, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    return head


def _pr(github_api, head: str, branch: str, login: str) -> int:
    git_out(github_api.repos[REPO].path, "branch", "--force", branch, head)
    return github_api.open_pull(REPO, head=branch, title=f"[None][feat] {branch}", login=login)


def _fail(service, failing, head: str, number: int, build: int) -> dict:
    """A failed PR pipeline of PR ``number`` at ``head``; its report once every run ended."""
    with service.client() as client:
        answer = post_pipeline_failure(
            client, failing[2], repository=REPO, build=build, head=head, pr=number
        )
        return wait_for_runs(client, answer["url"], timeout_s=240)


def _said(github_api, number: int) -> list[str]:
    return [
        c["body"]
        for c in github_api.repos[REPO].comments.get(number, [])
        if c["user"]["login"] == BOT_LOGIN
    ]


def _label(name: str) -> dict:
    return {
        "id": 901,
        "node_id": "LA_1",
        "url": f"https://api.github.com/repos/{REPO}/labels/{name}",
        "name": name,
        "description": None,
        "color": "ededed",
        "default": False,
        "archived_by": None,  # the ``opened`` payload's label shape has it
    }


def test_report_then_suggest_then_opt_outs(service, github_api, failing, tmp_path):
    head = _policy(github_api, tmp_path, f'[autonomy.signatures]\n"{SIGNATURE}" = "report"\n')
    alice = _pr(github_api, head, "alice/feature", "alice")

    [run] = _fail(service, failing, head, alice, 1)["runs"]
    assert run["state"] == "reported", service.logs()
    assert f'autonomy "report" for {SIGNATURE}' in run["reason"]
    assert len(github_api.pulls(REPO)) == 1 and _said(github_api, alice) == []  # alice's only

    head = _policy(github_api, tmp_path, '[autonomy]\ndefault = "suggest"\n')
    [run] = _fail(service, failing, head, alice, 2)["runs"]
    assert run["state"] == "suggested", (run["reason"], service.logs())
    [suggestion] = _said(github_api, alice)
    assert "**repairbot: a suggested fix**" in suggestion and "```diff" in suggestion
    assert "+    def _forward_impl(" in suggestion and "no fix PR is opened" in suggestion
    assert f"suggested on https://github.com/{REPO}/pull/{alice}" in run["reason"]
    assert len(github_api.pulls(REPO)) == 1 and not github_api.calls_to("POST", r"/pulls$")

    # bob's PR carries the opt-out label: its event and its failure get nothing.
    bob = _pr(github_api, head, "bob/feature", "bob")
    github_api.repos[REPO].pulls[bob]["labels"] = [_label("repairbot:opt-out")]
    statuses = len(github_api.calls_to("POST", r"/statuses/"))
    service.webhook("pull_request", github_api.pull_request_event(REPO, bob, "opened"), "bob-1")
    [run] = _fail(service, failing, head, bob, 3)["runs"]
    assert run["state"] == "opted_out", service.logs()
    assert f"{REPO}#{bob} opted out by maintainer with its label" in run["reason"]
    assert _said(github_api, bob) == [] and not github_api.calls_to("POST", rf"/pulls/{bob}/")
    assert len(github_api.calls_to("POST", r"/statuses/")) == statuses

    # alice opts her PR out: her next failure opens and posts nothing.
    comment = github_api.comment_event(REPO, alice, "/repairbot opt-out", login="alice")
    service.webhook("issue_comment", comment, "alice-opt-out")
    _wait(lambda: any("Opted out" in said for said in _said(github_api, alice)), service)
    [run] = _fail(service, failing, head, alice, 4)["runs"]
    assert run["state"] == "opted_out", service.logs()
    assert f"{REPO}#{alice} opted out by alice with /repairbot opt-out" in run["reason"]
    assert len(_said(github_api, alice)) == 2  # the suggestion and the reply, nothing since
    assert len(github_api.pulls(REPO)) == 2 and not github_api.calls_to("POST", r"/pulls$")
    with service.client() as client:
        page = client.get("/failures").text
    assert "opted out by alice" in page and "badge r-opted_out" in page
