"""The contract review on a PR, through PyGithub over HTTP against the GitHub double: one review
per head, found again by its marker, edited in place, outdated, resolved; suggestions outside the
diff fall back to patches; and what the review suggests, applied, leaves a clean tree."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from github import GithubException

from bot.db.records.github_writes import GitHubWrite
from bot.db.session import session_scope
from bot.forges.github.api import GitHubApi
from bot.forges.github.review_text import MARKER
from bot.forges.github.reviews import sync_contract_review
from bot.forges.review_plan import ReviewPlan, plan_review
from bot.git import commit_all, git
from fixers.sweep.run import fix, sweep
from tests.bot.conftest import REPO
from tests.fakes.github_reviews import comments_of, reviews_of
from tests.fakes.github_suggestions import apply_suggestions

# One test runs on SQLite and PostgreSQL (the outbox rows); the others on SQLite only.
SQLITE = pytest.mark.parametrize("settings", ["sqlite"], indirect=True)

BASE = '''from runtime.speculative.interface import SpecWorkerBase


class GoodWorker(SpecWorkerBase):
    """Fine."""

    def _forward_impl(self, *args, **kwargs):
        return None
'''
ADDED = '''

class BadWorker(SpecWorkerBase):
    """Overrides forward."""

    def forward(self, *args, **kwargs):
        return None


class _Double(SpecWorkerBase):
    @property
    def max_draft_len(self) -> int:
        return 1
'''
WRITES = ("POST", "PUT", "PATCH")
LEGACY = Path(__file__).resolve().parents[3] / "fixtures" / "legacy_workers"


def _source(tmp_path: Path, base: dict[str, str], head: dict[str, str]) -> Path:
    """A repository whose ``main`` has ``base`` and whose ``alice/feature`` adds ``head``."""
    source = tmp_path / "source"
    for path, text in base.items():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text(text)
    git(source, "init", "--quiet", "--initial-branch", "main")
    commit_all(source, "Base")
    git(source, "checkout", "--quiet", "-b", "alice/feature")
    for path, text in head.items():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text(text)
    commit_all(source, "Feature")
    return source


@pytest.fixture
def pr(github_api, tmp_path: Path) -> int:
    """PR ``alice/feature`` → ``main`` adding a worker that overrides forward and a stub double."""
    source = _source(tmp_path, {"pkg/workers.py": BASE}, {"pkg/workers.py": BASE + ADDED})
    github_api.create_repo(REPO, source)
    return github_api.open_pull(REPO, head="alice/feature", title="[None][feat] workers")


def _checkout(github_api, tmp_path: Path, number: int) -> tuple[Path, str]:
    head = github_api.repos[REPO].refresh(number)["head"]["sha"]
    path = tmp_path / f"head-{head[:12]}"
    if not path.exists():
        subprocess.run(
            ["git", "clone", "--quiet", str(github_api.repos[REPO].path), str(path)], check=True
        )
        git(path, "checkout", "--quiet", head)
    return path, head


def _plan(github_api, tmp_path: Path, number: int, *, keep: str = "") -> ReviewPlan:
    """The review plan of the PR's head (its base has no violation, so all are introduced);
    ``keep``: only the violations of that fix."""
    root, head = _checkout(github_api, tmp_path, number)
    result = fix(root, None, imports=False)
    found = [v for v in result.report.violations if not keep or v.fix == keep]

    def head_text(path: str) -> str | None:
        target = root / path
        return target.read_bytes().decode() if target.exists() else None

    return plan_review(head, found, result.changes, head_text)


def _push(github_api, tmp_path: Path, edit: dict[str, str], message: str) -> str:
    work = tmp_path / f"push-{len(list(tmp_path.iterdir()))}"
    subprocess.run(
        [
            "git",
            "clone",
            "--quiet",
            "--branch",
            "alice/feature",
            str(github_api.repos[REPO].path),
            str(work),
        ],
        check=True,
    )
    for path, text in edit.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    sha = commit_all(work, message)
    git(work, "push", "--quiet", "origin", "HEAD:refs/heads/alice/feature")
    return sha


def _writes(github_api) -> int:
    return sum(1 for c in github_api.calls if c.method in WRITES)


def test_the_first_check_posts_one_review_with_a_suggestion_per_fix(
    gh_settings, github_api, pr, tmp_path
) -> None:
    plan = _plan(github_api, tmp_path, pr)
    said = sync_contract_review(GitHubApi(gh_settings), REPO, pr, plan)

    [review] = reviews_of(github_api, REPO, pr)
    assert said == f"created review {review['id']} for {plan.head_sha}"
    assert review["state"] == "COMMENTED" and review["commit_id"] == plan.head_sha
    assert review["body"].startswith(MARKER)
    assert "### repairbot: 2 API-contract violations introduced by this PR" in review["body"]
    assert "`pkg/workers.py:14` `BadWorker` (forbidden-override)" in review["body"]
    assert "**2 one-click suggestions**" in review["body"]
    rename, stub = comments_of(github_api, REPO, review["id"])
    assert (rename["path"], rename["line"], rename["side"]) == ("pkg/workers.py", 14, "RIGHT")
    assert "```suggestion\n    def _forward_impl(self, *args, **kwargs):\n```" in rename["body"]
    assert rename["commit_id"] == plan.head_sha and rename["start_line"] is None
    assert stub["line"] == 21 and "raise NotImplementedError" in stub["body"]
    assert len(github_api.calls_to("POST", r"/pulls/\d+/reviews$")) == 1
    with session_scope(gh_settings.resolved_database_url) as session:
        [row] = session.query(GitHubWrite).filter_by(kind="review").all()
        assert row.remote_id == str(review["id"])


@SQLITE
def test_a_lost_answer_to_the_review_post_does_not_post_it_twice(
    gh_settings, github_api, pr, tmp_path
) -> None:
    # GitHub creates the review, then the answer is lost (a 502 after the fact).
    github_api.fault("POST", r"/pulls/\d+/reviews$", status=502, after_effect=True)

    said = sync_contract_review(GitHubApi(gh_settings), REPO, pr, _plan(github_api, tmp_path, pr))

    [review] = reviews_of(github_api, REPO, pr)
    assert said == f"created review {review['id']} for {review['commit_id']}"
    assert [c.status for c in github_api.calls_to("POST", r"/pulls/\d+/reviews$")] == [502]


@SQLITE
def test_a_pr_that_does_not_exist_is_an_error_and_writes_nothing(
    gh_settings, github_api, pr, tmp_path
) -> None:
    plan = _plan(github_api, tmp_path, pr)

    with pytest.raises(GithubException) as missing:
        sync_contract_review(GitHubApi(gh_settings), REPO, pr + 1000, plan)

    assert missing.value.status == 404
    assert _writes(github_api) == 0


@SQLITE
def test_the_same_plan_again_writes_nothing(gh_settings, github_api, pr, tmp_path) -> None:
    api = GitHubApi(gh_settings)
    plan = _plan(github_api, tmp_path, pr)
    sync_contract_review(api, REPO, pr, plan)
    before = _writes(github_api)

    said = sync_contract_review(api, REPO, pr, plan)

    assert said.startswith("unchanged")
    assert _writes(github_api) == before
    assert len(reviews_of(github_api, REPO, pr)) == 1


@SQLITE
def test_a_push_that_changes_nothing_suggested_posts_nothing(
    gh_settings, github_api, pr, tmp_path
) -> None:
    api = GitHubApi(gh_settings)
    sync_contract_review(api, REPO, pr, _plan(github_api, tmp_path, pr))
    _push(github_api, tmp_path, {"README.md": "Workers.\n"}, "Docs")
    before = _writes(github_api)

    plan = _plan(github_api, tmp_path, pr)
    said = sync_contract_review(api, REPO, pr, plan)

    assert said.startswith("unchanged") and _writes(github_api) == before
    assert len(reviews_of(github_api, REPO, pr)) == 1


@SQLITE
def test_a_new_head_gets_one_new_review_and_the_old_one_says_outdated(
    gh_settings, github_api, pr, tmp_path
) -> None:
    api = GitHubApi(gh_settings)
    first = _plan(github_api, tmp_path, pr)
    sync_contract_review(api, REPO, pr, first)
    _push(github_api, tmp_path, {"pkg/workers.py": '"""Workers."""\n' + BASE + ADDED}, "Doc")

    second = _plan(github_api, tmp_path, pr)
    said = sync_contract_review(api, REPO, pr, second)
    again = sync_contract_review(api, REPO, pr, second)

    old, new = reviews_of(github_api, REPO, pr)
    assert said == f"created review {new['id']} for {second.head_sha}"
    assert again.startswith("unchanged")
    assert new["commit_id"] == second.head_sha and old["commit_id"] == first.head_sha
    assert "Outdated" in old["body"] and new["html_url"] in old["body"]
    assert old["body"].startswith(MARKER)
    assert [c["line"] for c in comments_of(github_api, REPO, new["id"])] == [15, 22]


@SQLITE
def test_a_changed_plan_for_the_same_head_is_edited_in_place(
    gh_settings, github_api, pr, tmp_path
) -> None:
    api = GitHubApi(gh_settings)
    full = _plan(github_api, tmp_path, pr)
    rename_only = _plan(github_api, tmp_path, pr, keep="rename")
    sync_contract_review(api, REPO, pr, full)
    [review] = reviews_of(github_api, REPO, pr)

    said = sync_contract_review(api, REPO, pr, rename_only)

    assert said.startswith(f"updated review {review['id']} in place")
    [edited] = reviews_of(github_api, REPO, pr)
    assert "1 API-contract violation introduced" in edited["body"]
    rename, stub = comments_of(github_api, REPO, review["id"])
    assert "```suggestion" in rename["body"]
    assert stub["body"].startswith("No longer suggested")
    assert len(github_api.calls_to("POST", r"/pulls/\d+/reviews$")) == 1
    assert github_api.calls_to("PUT", rf"/pulls/{pr}/reviews/{review['id']}$")

    # Back to the full plan: the stub's comment carries its suggestion again.
    sync_contract_review(api, REPO, pr, full)
    assert "```suggestion" in comments_of(github_api, REPO, review["id"])[1]["body"]
    assert len(reviews_of(github_api, REPO, pr)) == 1


@SQLITE
def test_a_suggestion_the_review_of_this_head_lacks_is_shown_as_a_patch(
    gh_settings, github_api, pr, tmp_path
) -> None:
    api = GitHubApi(gh_settings)
    sync_contract_review(api, REPO, pr, _plan(github_api, tmp_path, pr, keep="rename"))

    sync_contract_review(api, REPO, pr, _plan(github_api, tmp_path, pr))

    [review] = reviews_of(github_api, REPO, pr)
    assert len(comments_of(github_api, REPO, review["id"])) == 1  # GitHub cannot add one
    assert "<details><summary><code>pkg/workers.py</code>" in review["body"]
    assert (
        "+    def _forward_impl(self, *args: object, **kwargs: object) -> None:" in review["body"]
    )


@SQLITE
def test_applied_suggestions_make_the_pr_clean_and_the_review_resolved(
    gh_settings, github_api, pr, tmp_path
) -> None:
    api = GitHubApi(gh_settings)
    sync_contract_review(api, REPO, pr, _plan(github_api, tmp_path, pr))

    head = apply_suggestions(github_api, REPO, pr)
    root, checked = _checkout(github_api, tmp_path, pr)
    assert checked == head
    assert sweep(root).violations == []
    plan = _plan(github_api, tmp_path, pr)
    assert plan.clean
    said = sync_contract_review(api, REPO, pr, plan)

    [review] = reviews_of(github_api, REPO, pr)
    assert said == f"resolved review {review['id']} at {head}"
    assert f"✅ resolved at {head}: no contract violations introduced" in review["body"]
    assert all(
        c["body"].startswith("✅ Resolved") for c in comments_of(github_api, REPO, review["id"])
    )
    before = _writes(github_api)
    assert sync_contract_review(api, REPO, pr, plan).startswith("unchanged")
    assert _writes(github_api) == before


@SQLITE
def test_a_clean_pr_without_a_review_gets_none(gh_settings, github_api, tmp_path) -> None:
    source = _source(tmp_path, {"pkg/workers.py": BASE}, {"pkg/workers.py": BASE + "# fine\n"})
    github_api.create_repo(REPO, source)
    number = github_api.open_pull(REPO, head="alice/feature", title="[None][feat] comment")
    plan = _plan(github_api, tmp_path, number)

    said = sync_contract_review(GitHubApi(gh_settings), REPO, number, plan)

    assert plan.clean and said.startswith("nothing to post")
    assert _writes(github_api) == 0 and reviews_of(github_api, REPO, number) == []


OLD_STYLE = '''from runtime.speculative.interface import SpecWorkerBase


class Helper:
    """Not a worker yet."""


class OldWorker(Helper):
    """Written before the contract."""

    max_draft_len = 1
    name = "old"
    kind = "chain"
    depth = 2

    def forward(self, *args, **kwargs):
        return None
'''


@SQLITE
def test_a_suggestion_outside_the_diff_falls_back_to_a_patch(
    gh_settings, github_api, tmp_path
) -> None:
    # The PR only changes OldWorker's base class: its forward, far below, is not in the diff.
    worker = OLD_STYLE.replace("class OldWorker(Helper):", "class OldWorker(SpecWorkerBase):")
    source = _source(tmp_path, {"pkg/old.py": OLD_STYLE}, {"pkg/old.py": worker})
    github_api.create_repo(REPO, source)
    number = github_api.open_pull(REPO, head="alice/feature", title="[None][feat] old")
    plan = _plan(github_api, tmp_path, number)
    [suggestion] = plan.suggestions
    assert suggestion.line == 16

    sync_contract_review(GitHubApi(gh_settings), REPO, number, plan)

    refused, made = github_api.calls_to("POST", r"/pulls/\d+/reviews$")
    assert refused.status == 422 and made.status == 200
    [review] = reviews_of(github_api, REPO, number)
    assert comments_of(github_api, REPO, review["id"]) == []
    assert "one-click" not in review["body"]
    assert "1 suggestion(s) shown as patches below" in review["body"]
    patch = _patch_in(review["body"])
    root, _ = _checkout(github_api, tmp_path, number)
    subprocess.run(["git", "apply", "-"], cwd=root, input=patch.encode(), check=True)
    assert sweep(root).violations == []


def _patch_in(body: str) -> str:
    found = re.search(r"^(`{3,})diff\n(.*?)^\1$", body, re.MULTILINE | re.DOTALL)
    assert found is not None, body
    return found[2]


@SQLITE
def test_the_snapshot_patch_and_the_suggestions_together_fix_the_pr(
    gh_settings, github_api, tmp_path
) -> None:
    dynamic = (LEGACY / "legacy_spec" / "dynamic_tree.py").read_text()
    source = _source(
        tmp_path, {"README.md": "Workers.\n"}, {"legacy_spec/dynamic_tree.py": dynamic}
    )
    github_api.create_repo(REPO, source)
    number = github_api.open_pull(REPO, head="alice/feature", title="[None][feat] tree")
    sync_contract_review(GitHubApi(gh_settings), REPO, number, _plan(github_api, tmp_path, number))
    [review] = reviews_of(github_api, REPO, number)
    assert "snapshot them on self" in review["body"]

    # The author applies the patch first and pushes; the rename's comment follows its line.
    work = tmp_path / "author"
    subprocess.run(
        [
            "git",
            "clone",
            "--quiet",
            "--branch",
            "alice/feature",
            str(github_api.repos[REPO].path),
            str(work),
        ],
        check=True,
    )
    subprocess.run(
        ["git", "apply", "-"], cwd=work, input=_patch_in(review["body"]).encode(), check=True
    )
    commit_all(work, "Apply the snapshot patch")
    git(work, "push", "--quiet", "origin", "HEAD:refs/heads/alice/feature")
    apply_suggestions(github_api, REPO, number)

    root, _ = _checkout(github_api, tmp_path, number)
    assert sweep(root).violations == []


@SQLITE
def test_the_double_refuses_a_comment_outside_the_diff_as_github_does(
    gh_settings, github_api, pr
) -> None:
    api = GitHubApi(gh_settings)
    pull = api.repo(REPO).get_pull(pr)
    commit = api.repo(REPO).get_commit(pull.head.sha)
    comment = {"path": "pkg/workers.py", "body": "x", "line": 2, "side": "RIGHT"}

    with pytest.raises(GithubException) as refused:
        pull.create_review(commit=commit, body="b", event="COMMENT", comments=[comment])

    assert refused.value.status == 422
    assert "Pull request review thread line must be part of the diff" in str(refused.value.data)
    with pytest.raises(GithubException) as bad_event:
        pull.create_review(commit=commit, body="b", event="SHIP_IT")
    assert bad_event.value.status == 422
    assert reviews_of(github_api, REPO, pr) == []

    # Lines 9..21 are added by the PR: a range comment there is taken, and read back.
    inside = {**comment, "line": 14, "start_line": 12, "start_side": "RIGHT"}
    made = pull.create_review(commit=commit, body="b", event="COMMENT", comments=[inside])
    assert pull.get_review(made.id).body == "b"
    [listed] = pull.get_review_comments()
    assert (listed.start_line, listed.line, listed.pull_request_review_id) == (12, 14, made.id)
    assert listed.diff_hunk.startswith("@@ ") and listed.diff_hunk.endswith(
        "def forward(self, *args, **kwargs):"
    )
