"""The GitHub stories end to end: the served API and its worker (real processes) talking to the
fake GitHub over HTTP, with real git pushes into its bare repositories."""

from __future__ import annotations

import subprocess

import pytest

from bot.cli.demo_target import build_target, run_tests, wait_for_runs, wait_for_verification
from bot.git import commit_all, fresh_worktree, git
from fixers.sweep.run import fix, write_changes
from tests.e2e.conftest import github_service, post_pipeline_failure

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO = "acme/trt"


@pytest.fixture(scope="module")
def failing(tmp_path_factory):
    """The legacy workers (a worker overriding forward, a test double without _forward_impl)."""
    source = tmp_path_factory.mktemp("target") / "repo"
    head = build_target(source)
    console = run_tests(source).console
    assert b"must not override SpecWorkerBase.forward" in console
    return source, head, console


@pytest.fixture
def service(make_service, github_api, failing):
    github_api.create_repo(REPO, failing[0])
    return github_service(make_service, github_api)


def _post(client, failing, build: int):
    _, head, console = failing
    return post_pipeline_failure(client, console, repository=REPO, build=build, head=head)


def _wait(predicate, service, timeout_s=120):
    import time

    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, service.logs()
        time.sleep(0.2)


def test_one_pr_fixes_both_and_a_merged_human_pr_supersedes_it(
    service, github_api, failing, tmp_path
):
    with service.client() as client:
        report = wait_for_runs(client, _post(client, failing, 1)["url"], timeout_s=180)
    assert [r["state"] for r in report["runs"]] == ["pr_opened"], service.logs()
    [pull] = github_api.pulls(REPO)
    assert pull["title"].startswith("[https://nvbugs/6442074][fix] ")
    body = pull["body"]
    for section in (
        "## Description",
        "## Test Coverage",
        "## PR Checklist",
        "## Safety evidence",
        "<!-- repairbot: signature=",
        "Reproduce locally:",
    ):
        assert section in body
    files = {f["filename"] for f in github_api.repos[REPO].files(pull["number"])}
    assert "tests/test_worker_double.py" in files and any(
        f.startswith("legacy_spec/") for f in files
    )
    bare = github_api.repos[REPO].path
    checkout = fresh_worktree(bare, tmp_path / "ours", pull["head"]["sha"])
    assert run_tests(checkout).returncode == 0  # one PR, and it makes the suite pass

    # A human fixes the same violations in their own PR, and it merges first.
    human = tmp_path / "human"
    subprocess.run(["git", "clone", "--quiet", str(bare), str(human)], check=True)
    write_changes(human, fix(human, None, imports=False))
    commit_all(human, "Rename forward to _forward_impl")
    git(human, "push", "--quiet", "origin", "HEAD:refs/heads/alice/spec-fix")
    number = github_api.open_pull(REPO, head="alice/spec-fix", title="[None][fix] rename")
    github_api.merge_pull(REPO, number)
    service.webhook("pull_request", github_api.pull_request_event(REPO, number, "closed"), "pr-1")
    ours = pull["number"]
    _wait(lambda: github_api.repos[REPO].pulls[ours]["state"] == "closed", service)

    def superseded_comments() -> list[str]:
        comments = [c["body"] for c in github_api.repos[REPO].comments[ours]]
        return [c for c in comments if f"Superseded by #{number}" in c]

    # The PR is closed on GitHub before the row is written; the comment leaves through the
    # outbox after that write commits (bot.pipeline.github_send), so it may land a moment later.
    _wait(lambda: len(superseded_comments()) == 1, service)

    def fix_states() -> list[str]:
        with service.client() as client:
            return [fix["state"] for fix in client.get("/api/v1/fixes").json()]

    # The task closes the PR on GitHub, then commits the new state; the API's reads do not wait
    # for a commit in flight (they take no write lock), so the row may say "open" a moment longer.
    _wait(lambda: fix_states() == ["superseded"], service)


def test_ten_failures_of_one_violation_give_one_pr_and_nine_links(service, github_api, failing):
    with service.client() as client:
        answers = [_post(client, failing, build) for build in range(100, 110)]
        reports = [wait_for_runs(client, a["url"], timeout_s=400) for a in answers]
        fixes = client.get("/api/v1/fixes").json()
    states = sorted(run["state"] for r in reports for run in r["runs"])
    assert states == ["duplicate"] * 9 + ["pr_opened"], service.logs()
    assert len(github_api.pulls(REPO)) == 1 and len(fixes) == 1
    assert {run["fix_id"] for r in reports for run in r["runs"]} == {fixes[0]["id"]}
    assert len(github_api.calls_to("POST", r"/pulls$")) == 1


def test_a_github_pr_is_verified_and_the_verdict_reported_on_it(make_service, github_api, failing):
    github_api.create_repo(REPO, failing[0])
    service = github_service(make_service, github_api, verify_fallback_after_s="1")
    with service.client() as client:
        wait_for_runs(client, _post(client, failing, 1)["url"], timeout_s=180)
        [fix_row] = client.get("/api/v1/fixes").json()
        verification = wait_for_verification(client, fix_row["id"], timeout_s=600)
    assert verification["verdict"] == "fixed", (verification, service.logs())
    assert verification["device"] == "cpu" and verification["on_requested_device"] is False
    ours = fix_row["number"]
    _wait(
        lambda: any(
            "repairbot verification" in c["body"]
            for c in github_api.repos[REPO].comments.get(ours, [])
        ),
        service,
    )
    comment = next(
        c["body"]
        for c in github_api.repos[REPO].comments[ours]
        if "repairbot verification" in c["body"]
    )
    assert "NOT on the requested H100_PCIe" in comment
    statuses = [call.body for call in github_api.calls_to("POST", r"/statuses/")]
    assert {"state": "success", "context": "repairbot/verify"}.items() <= statuses[-1].items()
