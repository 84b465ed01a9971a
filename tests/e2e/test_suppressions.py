"""Human decisions the bot keeps (issue 15), end to end with the served API, its worker and the
GitHub double: a fix PR a human closes unmerged holds its violations (the next five identical
failures open nothing, and the dashboard says who decided), and a merged fix that is reverted on
the base branch is never re-applied automatically (the dashboard shows the revert). A
maintainer's ``/repairbot unsuppress`` lifts a suppression, and one new PR follows."""

from __future__ import annotations

import subprocess
import time

import pytest
from sqlalchemy import select

from bot.cli.demo_target import wait_for_runs
from bot.db.models import Suppression
from bot.db.session import session_scope
from bot.git import git
from tests.e2e.test_github_stories import REPO, _post, _wait, failing, service

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
__all__ = ["failing", "service"]  # the fixtures, shared with the GitHub stories


def _closed_by(github_api, number: int, login: str, *, merged: bool) -> dict:
    if merged:
        github_api.merge_pull(REPO, number, login=login)
    else:
        pull = github_api.repos[REPO].pulls[number]
        pull["state"], pull["closed_at"] = "closed", pull["updated_at"]
    payload = github_api.pull_request_event(REPO, number, "closed")
    payload["sender"]["login"] = login
    return payload


def _suppressions(service) -> list[Suppression]:
    url = f"sqlite:///{(service.data_dir / 'repairbot.db').resolve()}"
    with session_scope(url) as session:
        rows = list(session.scalars(select(Suppression).order_by(Suppression.id)))
        session.expunge_all()
    return rows


def test_a_fix_closed_by_a_human_holds_its_violations(service, github_api, failing):
    with service.client() as client:
        first = wait_for_runs(client, _post(client, failing, 1)["url"], timeout_s=180)
        assert [r["state"] for r in first["runs"]] == ["pr_opened"], service.logs()
        [fix] = client.get("/api/v1/fixes").json()
    payload = _closed_by(github_api, fix["number"], "carol", merged=False)
    service.webhook("pull_request", payload, "close-1")
    _wait(lambda: [s.decided_by for s in _suppressions(service)] == ["carol"], service)

    with service.client() as client:
        answers = [_post(client, failing, build) for build in range(2, 7)]
        reports = [wait_for_runs(client, a["url"], timeout_s=300) for a in answers]
        page = client.get(f"/fixes/{fix['id']}").text
        fixes = client.get("/api/v1/fixes").json()
    runs = [run for report in reports for run in report["runs"]]
    assert [run["state"] for run in runs] == ["suppressed"] * 5, service.logs()
    assert {run["fix_id"] for run in runs} == {fix["id"]}
    assert len(github_api.pulls(REPO)) == 1 and len(fixes) == 1  # nothing new opened
    assert len(github_api.calls_to("POST", r"/pulls$")) == 1
    [row] = _suppressions(service)
    assert (row.reason, row.fix_id, row.held_runs, row.lifted_at) == (
        "closed_unmerged",
        fix["id"],
        5,
        None,
    )
    assert "suppressed by carol" in page and "Held back by a human decision" in page

    # A reader cannot lift it; a maintainer's command does, and exactly one new PR follows.
    github_api.repos[REPO].permissions.update(dave="read", maintainer="write")
    for login, delivery in (("dave", "lift-1"), ("maintainer", "lift-2")):
        comment = github_api.comment_event(
            REPO, fix["number"], "/repairbot unsuppress", login=login
        )
        service.webhook("issue_comment", comment, delivery)

    def replies() -> list[str]:
        return [c["body"] for c in github_api.repos[REPO].comments[fix["number"]]]

    deadline = time.monotonic() + 180
    while len(github_api.pulls(REPO)) < 2:
        assert time.monotonic() < deadline, (replies(), _suppressions(service), service.logs())
        time.sleep(0.2)
    [row] = _suppressions(service)
    assert row.lifted_by == "maintainer" and row.lifted_at is not None
    # The replies are deferred writes, sent by their own tasks: the PR may come first.
    _wait(lambda: sum(r.startswith("@") for r in replies()) == 2, service)
    said = replies()
    assert any("@dave Sorry" in r and "`read` access" in r for r in said), said
    assert any("repairing run" in r and "a new PR follows" in r for r in said), said
    with service.client() as client:
        _wait(lambda: len(client.get("/api/v1/fixes").json()) == 2, service)
        page = client.get(f"/fixes/{fix['id']}").text
    assert "Suppression lifted by maintainer" in page
    assert len(github_api.calls_to("POST", r"/pulls$")) == 2


def test_a_reverted_fix_is_not_applied_again(service, github_api, failing, tmp_path):
    with service.client() as client:
        wait_for_runs(client, _post(client, failing, 1)["url"], timeout_s=180)
        [fix] = client.get("/api/v1/fixes").json()
    merged = _closed_by(github_api, fix["number"], "maintainer", merged=True)
    service.webhook("pull_request", merged, "merge-1")
    with service.client() as client:
        _wait(lambda: client.get(f"/api/v1/fixes/{fix['id']}").json()["state"] == "merged", service)

    # Someone reverts the fix on main: the violations are back on the base branch.
    checkout = tmp_path / "revert"
    bare = github_api.repos[REPO].path
    subprocess.run(["git", "clone", "--quiet", str(bare), str(checkout)], check=True)
    git(checkout, "-c", "user.name=dev", "-c", "user.email=dev@example.com", "revert",
        "--no-edit", "HEAD")  # fmt: skip
    git(checkout, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    reverted = git(checkout, "rev-parse", "HEAD").strip()

    with service.client() as client:
        answer = _post(client, (failing[0], reverted, failing[2]), 2)
        report = wait_for_runs(client, answer["url"], timeout_s=180)
        page = client.get(f"/fixes/{fix['id']}").text
    assert [run["state"] for run in report["runs"]] == ["suppressed"], service.logs()
    assert len(github_api.pulls(REPO)) == 1  # the merged one only
    [row] = _suppressions(service)
    assert (row.reason, row.fix_id, row.held_runs) == ("reverted", fix["id"], 1)
    assert "was merged, then reverted" in page and reverted[:12] in page


def test_a_larger_violation_set_never_brings_a_suppressed_fix_back(
    service, github_api, failing, tmp_path
):
    with service.client() as client:
        wait_for_runs(client, _post(client, failing, 1)["url"], timeout_s=180)
        [fix] = client.get("/api/v1/fixes").json()
    service.webhook("pull_request", _closed_by(github_api, fix["number"], "carol", merged=False),
                    "close-1")  # fmt: skip
    _wait(lambda: len(_suppressions(service)) == 1, service)

    # One more violation lands on main: the violation set (and its key) is new.
    checkout = tmp_path / "dev"
    subprocess.run(["git", "clone", "--quiet", str(github_api.repos[REPO].path), str(checkout)],
                   check=True)  # fmt: skip
    (checkout / "legacy_spec" / "late.py").write_text(LATE_WORKER)
    git(checkout, "add", "--all")
    git(checkout, "-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-qm",
        "Add LateWorker")  # fmt: skip
    git(checkout, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    head = git(checkout, "rev-parse", "HEAD").strip()

    with service.client() as client:
        report = wait_for_runs(
            client, _post(client, (failing[0], head, failing[2]), 2)["url"], timeout_s=240
        )
        fixes = client.get("/api/v1/fixes").json()
    assert [run["state"] for run in report["runs"]] == ["pr_opened"], service.logs()
    [new] = [f for f in fixes if f["id"] != fix["id"]]
    assert new["files"] == ["legacy_spec/late.py"]  # the suppressed violations stay held
    assert not set(fix["files"]) & set(new["files"])
    [run] = report["runs"]
    assert "held back" in " ".join(t["reason"] for t in run["transitions"])


LATE_WORKER = (
    "from runtime.speculative.interface import SpecWorkerBase\n"
    "\n\n"
    "class LateWorker(SpecWorkerBase):\n"
    "    def forward(self, *args, **kwargs):\n"
    "        return None\n"
)
