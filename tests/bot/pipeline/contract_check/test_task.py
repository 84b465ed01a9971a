"""The pre-merge contract check against the GitHub double: real repositories, real merges.

Each PR is branched from the pre-contract commit; ``main`` then has the contract. After every
check, good or bad, the worktrees dir holds nothing (no tree, no lease).
"""

from __future__ import annotations

import threading
from typing import Any

from sqlalchemy import select

from bot.db.records.contract_checks import ContractCheck
from bot.db.session import session_scope
from bot.forges.github.api import GitHubApi
from bot.forges.github.mirror import sync_mirror
from bot.pipeline.contract_check.blobs import swept_blobs
from bot.pipeline.contract_check.task import check_pull
from tests.bot.pipeline.pr_repos import commit, worker
from tests.fakes.github_git import git_out
from tests.fakes.github_reviews import reviews_of

REPO = "acme/spec"
TREE_FILES = {"spec", "spec.lock", "spec.tree"}  # the tree, its lock, which tree it holds


def _open(github_api, spec_repo, branch: str, files: dict[str, str | None]) -> tuple[int, str]:
    repo, pre = spec_repo
    head = commit(repo.path, branch, files, parent=pre, message=f"work on {branch}")
    return github_api.open_pull(REPO, head=branch, title=f"[None][feat] {branch}"), head


def _statuses(github_api, sha: str | None = None) -> list[dict[str, Any]]:
    return [
        s
        for s in github_api.repos[REPO].statuses
        if s["context"] == "repairbot/contracts" and sha in (None, s["sha"])
    ]


def _rows(settings) -> list[tuple[int, str, str]]:
    with session_scope(settings.resolved_database_url) as session:
        rows = session.scalars(select(ContractCheck).order_by(ContractCheck.id)).all()
        return [(r.number, r.state, r.description) for r in rows]


def _left_behind(settings) -> list[str]:
    """What the checks left besides the one tree per repository (nothing, ever), and any file
    of that tree that is not in the tree it says it holds."""
    worktrees = settings.worktrees_dir
    found = sorted(p.name for p in worktrees.iterdir()) if worktrees.exists() else []
    trees, mirror = settings.contract_trees_dir, settings.github_mirrors_dir / f"{REPO}.git"
    if mirror.exists():
        found += [line for line in git_out(mirror, "worktree", "list").splitlines()[1:]]
    if not trees.exists():
        return found
    found += [p.name for p in (trees / "acme").iterdir() if p.name not in TREE_FILES]
    on_disk = {
        p.relative_to(trees / REPO).as_posix() for p in (trees / REPO).rglob("*") if p.is_file()
    }
    held = set(swept_blobs(mirror, (trees / f"{REPO}.tree").read_text()))
    return found + sorted(on_disk ^ held)


def _check(settings, number: int, **kwargs: Any) -> str:
    return check_pull(settings, GitHubApi(settings), REPO, number, **kwargs)


def test_a_clean_pr_gets_success_and_no_review(gh_settings, github_api, spec_repo):
    number, head = _open(github_api, spec_repo, "docs", {"README.md": "# spec\n\nMore.\n"})

    said = _check(gh_settings, number)

    [status] = _statuses(github_api)
    assert (status["sha"], status["state"]) == (head, "success"), said
    assert status["description"] == "no contract violations introduced"
    assert reviews_of(github_api, REPO, number) == []
    assert _rows(gh_settings) == [(number, "success", "no contract violations introduced")]
    assert _left_behind(gh_settings) == []


def test_a_pr_adding_a_violating_worker_fails_with_the_list_and_one_review(
    gh_settings, github_api, spec_repo
):
    number, head = _open(github_api, spec_repo, "ngram", {"spec/ngram.py": worker("NGramWorker")})

    _check(gh_settings, number)

    [status] = _statuses(github_api)
    assert (status["sha"], status["state"]) == (head, "failure")
    assert status["description"] == (
        "1 contract violation introduced: NGramWorker (forbidden-override)"
    )
    assert status["target_url"].endswith(f"/pull/{number}")
    [review] = reviews_of(github_api, REPO, number)
    assert review["commit_id"] == head and "NGramWorker" in review["body"]
    [(_, state, _)] = _rows(gh_settings)
    assert state == "failure" and _left_behind(gh_settings) == []


def test_many_violations_are_listed_within_githubs_140_characters(
    gh_settings, github_api, spec_repo
):
    files = {f"spec/w{i}.py": worker(f"VeryLongNamedDraftWorker{i}") for i in range(6)}
    number, _ = _open(github_api, spec_repo, "many", files)

    _check(gh_settings, number)

    [status] = _statuses(github_api)
    assert status["description"].startswith("6 contract violations introduced: VeryLong")
    assert len(status["description"]) <= 140 and status["description"].endswith("…")


def test_a_violation_the_base_already_has_is_not_the_prs(gh_settings, github_api, spec_repo):
    repo, _ = spec_repo
    # main has a worker that overrides forward; the PR, branched after it, edits that very file
    # and keeps the override (one line lower: lines are not a violation's identity).
    old = commit(
        repo.path, "main", {"spec/old.py": worker("OldWorker")}, parent="main", message="old"
    )
    edited = {"spec/old.py": "# still old\n" + worker("OldWorker")}
    number, _ = _open(github_api, (repo, old), "touch-old", edited)

    _check(gh_settings, number)

    [status] = _statuses(github_api)
    assert (status["state"], status["description"]) == (
        "success",
        "no contract violations introduced",
    )
    assert reviews_of(github_api, REPO, number) == []


def test_a_merge_conflict_is_an_error_naming_the_paths(gh_settings, github_api, spec_repo):
    # The contract rewrote spec/eagle.py; this PR rewrote the same lines its own way.
    number, head = _open(
        github_api, spec_repo, "eagle", {"spec/eagle.py": worker("EagleWorker", "step")}
    )

    _check(gh_settings, number)

    [status] = _statuses(github_api)
    assert (status["sha"], status["state"]) == (head, "error")
    assert status["description"] == "merge conflicts with main in spec/eagle.py"
    assert reviews_of(github_api, REPO, number) == []
    assert _left_behind(gh_settings) == [] and not gh_settings.contract_trees_dir.exists()


def test_a_pr_touching_5000_files_is_an_error_and_nothing_is_written(
    gh_settings, github_api, spec_repo
):
    files: dict[str, str | None] = {f"gen/m{i:04}.py": f"X = {i}\n" for i in range(5000)}
    number, head = _open(github_api, spec_repo, "generated", files)

    _check(gh_settings, number)

    [status] = _statuses(github_api)
    assert (status["sha"], status["state"]) == (head, "error")
    assert status["description"] == "too many files (5000 > 3000) for the contract check"
    assert _left_behind(gh_settings) == [] and not gh_settings.contract_trees_dir.exists()


def test_a_force_push_during_the_check_answers_for_the_commit_checked(
    gh_settings, github_api, spec_repo
):
    repo, pre = spec_repo
    number, first = _open(github_api, spec_repo, "ngram", {"spec/ngram.py": worker("NGramWorker")})
    pushed: list[str] = []

    def force_push_once(done: int, total: int) -> None:
        # The sweep reports progress while it works: the author force-pushes right then.
        if not pushed:
            files = {"spec/ngram.py": worker("NGramWorker", "_forward_impl")}
            pushed.append(commit(repo.path, "ngram", files, parent=pre, message="rewritten"))

    said = _check(gh_settings, number, progress=force_push_once)

    assert [s["state"] for s in _statuses(github_api, first)] == ["failure"], said
    assert _statuses(github_api, pushed[0]) == []
    assert reviews_of(github_api, REPO, number) == []  # the review belongs to the new head
    assert "head moved" in said and _left_behind(gh_settings) == []

    _check(gh_settings, number)  # what the new head's synchronize does

    assert [s["state"] for s in _statuses(github_api, pushed[0])] == ["success"]


def test_a_deleted_head_branch_is_skipped_without_a_status(gh_settings, github_api, spec_repo):
    repo, _ = spec_repo
    number, _ = _open(github_api, spec_repo, "gone", {"spec/ngram.py": worker("NGramWorker")})
    git_out(repo.path, "update-ref", "-d", "refs/heads/gone")  # the author deletes the branch

    said = _check(gh_settings, number)

    assert said == f"skipped: #{number} is closed"
    assert _statuses(github_api) == []
    assert _rows(gh_settings) == [(number, "skipped", f"#{number} is closed")]
    assert _left_behind(gh_settings) == [] and not gh_settings.contract_trees_dir.exists()


def test_a_redelivery_for_the_same_head_posts_nothing(gh_settings, github_api, spec_repo):
    number, _ = _open(github_api, spec_repo, "ngram", {"spec/ngram.py": worker("NGramWorker")})
    _check(gh_settings, number)
    writes = len(github_api.calls) - len(github_api.calls_to("GET", ""))

    said = _check(gh_settings, number)

    assert "was answered: failure" in said
    assert len(github_api.calls) - len(github_api.calls_to("GET", "")) == writes
    assert len(_statuses(github_api)) == 1 and len(reviews_of(github_api, REPO, number)) == 1


def test_prs_by_bots_are_not_checked(gh_settings, github_api, spec_repo):
    repo, pre = spec_repo
    commit(repo.path, "bot-fix", {"spec/ngram.py": worker("NGramWorker")}, parent=pre, message="x")
    number = github_api.open_pull(REPO, head="bot-fix", title="fix", login="repairbot[bot]")

    assert "not checked" in _check(gh_settings, number)
    assert _statuses(github_api) == [] and _rows(gh_settings) == []


def test_two_checks_of_one_head_at_once_post_its_status_once(gh_settings, github_api, spec_repo):
    """Two workers given the same PR at once (real threads, one barrier): whatever each says,
    the head gets one status and one review (``bot.forges.github.statuses``)."""
    number, head = _open(github_api, spec_repo, "twice", {"spec/ngram.py": worker("NGramWorker")})
    # The mirror made first: two threads creating it at once race in ``git init`` (a transient
    # error the task retries; not what this test is about).
    sync_mirror(gh_settings, REPO, GitHubApi(gh_settings).token())
    barrier = threading.Barrier(2)
    said: list[str] = []

    def check() -> None:
        barrier.wait()
        said.append(_check(gh_settings, number))

    threads = [threading.Thread(target=check) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(said) == 2, said
    assert [s["state"] for s in _statuses(github_api, head)] == ["failure"], said
    assert len(reviews_of(github_api, REPO, number)) == 1, said
    assert _left_behind(gh_settings) == []
