"""Fan-out (issue 15), end to end with the served API, its worker and the GitHub double: ten PR
pipelines fail because of one violation set on their base branch. One fix PR is opened from the
base (none of the PRs' own commits in it), and each PR gets one comment naming it, edited in
place afterwards: a second failure from each PR posts nothing new, and when the fix merges each
comment is edited exactly once and the PRs still open get the repository's re-run command."""

from __future__ import annotations

import subprocess

import pytest
from sqlalchemy import select

from bot.cli.demo_target import wait_for_runs
from bot.db.records.pr_notices import PrNotice
from bot.db.session import session_scope
from bot.git import commit_all, git
from bot.pipeline.fan_out.text import NOTICE_MARKER
from tests.e2e.conftest import github_service, post_pipeline_failure
from tests.e2e.test_github_stories import REPO, _wait, failing

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
__all__ = ["failing"]  # the fixture, shared with the GitHub stories
PRS = 10


@pytest.fixture
def prs(github_api, failing, tmp_path) -> dict[int, str]:
    """``acme/trt`` whose ``main`` configures a re-run command, and ten open PRs on it, each
    with a commit of its own: {PR number: head}."""
    github_api.create_repo(REPO, failing[0])
    checkout = tmp_path / "dev"
    subprocess.run(
        ["git", "clone", "--quiet", str(github_api.repos[REPO].path), str(checkout)], check=True
    )
    (checkout / ".repairbot.toml").write_text('[fan_out]\nrerun_command = "/bot run"\n')
    commit_all(checkout, "Let repairbot re-run PR pipelines")
    git(checkout, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    heads = {}
    for index in range(PRS):
        git(checkout, "checkout", "--quiet", "-b", f"dev/pr-{index}", "main")
        (checkout / "docs").mkdir(exist_ok=True)
        (checkout / "docs" / f"pr-{index}.md").write_text(f"PR {index}'s own change\n")
        head = commit_all(checkout, f"PR {index}'s own change")
        git(checkout, "push", "--quiet", "origin", f"HEAD:refs/heads/dev/pr-{index}")
        number = github_api.open_pull(REPO, head=f"dev/pr-{index}", title=f"[None][feat] {index}")
        heads[number] = head
    return heads


@pytest.fixture
def service(make_service, github_api, prs):
    return github_service(
        make_service,
        github_api,
        # No worker serves the failure's GPU queue: the fix's verification stays queued, so the
        # notices change only with the fix's state (and the PATCH counts below are exact).
        verify_fallback_after_s="3600",
    )


def _post_pr_failure(client, console: bytes, build: int, number: int, head: str) -> dict:
    return post_pipeline_failure(
        client, console, repository=REPO, build=build, head=head, pr=number
    )


def _failures(service, console: bytes, prs: dict[int, str], first_build: int) -> list[dict]:
    with service.client() as client:
        answers = [
            _post_pr_failure(client, console, first_build + i, number, head)
            for i, (number, head) in enumerate(prs.items())
        ]
        reports = [wait_for_runs(client, a["url"], timeout_s=400) for a in answers]
    return [run for report in reports for run in report["runs"]]


def _notices(github_api, number: int) -> list[dict]:
    return [c for c in github_api.repos[REPO].comments[number] if NOTICE_MARKER in c["body"]]


def _rows(service) -> list[PrNotice]:
    url = f"sqlite:///{(service.data_dir / 'repairbot.db').resolve()}"
    with session_scope(url) as session:
        rows = list(session.scalars(select(PrNotice).order_by(PrNotice.pr_number)))
        session.expunge_all()
    return rows


def test_ten_pr_pipelines_one_root_cause_on_the_base(service, github_api, failing, prs, tmp_path):
    console = failing[2]
    runs = _failures(service, console, prs, 300)
    assert sorted(r["state"] for r in runs) == ["duplicate"] * 9 + ["pr_opened"], service.logs()
    [fix] = [p for p in github_api.pulls(REPO) if p["user"]["login"] != "alice"]
    assert fix["base"]["ref"] == "main"
    repo = github_api.repos[REPO]
    # Made from main's head, not from a PR head: none of the PRs' own commits ride along.
    assert git(repo.path, "rev-parse", f"{fix['head']['sha']}^").strip() == repo.sha(
        "refs/heads/main"
    )
    assert not any(f["filename"].startswith("docs/") for f in repo.files(fix["number"]))
    _wait(lambda: all(_notices(github_api, n) for n in prs), service)
    for number in prs:
        [notice] = _notices(github_api, number)
        assert f"#{fix['number']} ({fix['html_url']})" in notice["body"]
        assert "comes from the base branch `main`" in notice["body"]
        assert "**Verification of the fix:** queued" in notice["body"]

    # A second failure from each PR, and one from a PR GitHub does not have: nothing new opened,
    # the notices stand as they are, the unknown PR's notice is recorded as failed.
    missing, some_head = 99999, next(iter(prs.values()))
    again = _failures(service, console, {**prs, missing: some_head}, 400)
    assert [r["state"] for r in again] == ["duplicate"] * (PRS + 1), service.logs()
    assert len(github_api.calls_to("POST", r"/pulls$")) == 1
    _wait(
        lambda: any(r.pr_number == missing and r.state == "failed" for r in _rows(service)), service
    )

    # One PR is closed by its author; another's author (not a collaborator) pushes new commits
    # after its failure: nobody reviewed them, so the bot must not re-run that PR's CI.
    closed, moved = max(prs), min(prs)
    repo.pulls[closed]["state"] = "closed"
    checkout = tmp_path / "dev"
    index = sorted(prs).index(moved)
    git(checkout, "checkout", "--quiet", f"dev/pr-{index}")
    (checkout / "docs" / f"pr-{index}.md").write_text("new, unreviewed commits\n")
    commit_all(checkout, "a push after the failure")
    git(checkout, "push", "--quiet", "origin", f"HEAD:refs/heads/dev/pr-{index}")
    github_api.merge_pull(REPO, fix["number"])
    service.webhook(
        "pull_request", github_api.pull_request_event(REPO, fix["number"], "closed"), "m"
    )

    def settled() -> bool:
        merged = all("**has been merged**" in _notices(github_api, n)[0]["body"] for n in prs)
        rows = _rows(service)
        held = any(r.pr_number == moved and r.rerun_held for r in rows)
        return merged and held and sum(r.rerun_comment_id is not None for r in rows) == PRS - 2

    _wait(settled, service)  # the last thing the merge's refresh does: nothing is left queued
    _wait(lambda: "A maintainer must trigger" in _notices(github_api, moved)[0]["body"], service)
    for number in prs:
        [notice] = _notices(github_api, number)
        patches = github_api.calls_to("PATCH", rf"/issues/comments/{notice['id']}$")
        # Edited once when the fix merged; the moved PR's perhaps once more, to say why no
        # re-run (one edit when both were known by the time it was sent).
        edits = (1, 2) if number == moved else (1,)
        assert len(patches) in edits, (number, [p.body for p in patches])
        reruns = [c for c in repo.comments[number] if c["body"] == "/bot run"]
        assert len(reruns) == (0 if number in (closed, moved) else 1)
        assert len(repo.comments[number]) == 1 + len(reruns)
    rows = {r.pr_number: r for r in _rows(service)}
    assert (
        rows[missing].reason
        == f"PR #{missing} of {REPO} not found on GitHub (404): no notice posted"
    )
    assert {r.state for n, r in rows.items() if n != missing} == {"posted"}
    assert len(github_api.calls_to("POST", r"/pulls$")) == 1
    # The fix's page lists every PR told, with its comment, and the refusal of the unknown one.
    with service.client() as client:
        [ours] = client.get("/api/v1/fixes").json()
        page = client.get(f"/fixes/{ours['id']}").text
    assert f'Affected PRs told <span class="n">{PRS + 1}</span>' in page
    assert all(f"<td>#{number}</td>" in page for number in [*prs, missing])
    assert "not found on GitHub (404): no notice posted" in page
