"""The pre-merge contract check end to end: ``repairbot serve`` (its embedded worker) receiving
signed webhooks, the GitHub double answering over HTTP, real pushes into its repositories.

The story of issue #14: three PRs are open, branched before a contract commit; one adds a worker
that overrides ``forward``. The contract lands on ``main``: exactly that PR fails
``repairbot/contracts`` and gets one review whose suggestions, committed as GitHub commits them,
turn it green on the next push; the other two stay green (re-checked against the new base,
their status unchanged: the same status asked for again is not POSTed again). A push that
changes nothing posts nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from sqlalchemy import select

from bot.db.records.contract_checks import ContractCheck
from bot.db.session import session_scope
from tests.bot.pipeline.pr_repos import CONTRACT, PRE_CONTRACT, commit, new_repo, worker
from tests.fakes.github_api import TOKEN
from tests.fakes.github_reviews import reviews_of
from tests.fakes.github_suggestions import apply_suggestions

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO = "acme/spec"
CONTEXT = "repairbot/contracts"


@pytest.fixture
def story(make_service, github_api, tmp_path):
    """``acme/spec`` before the contract, and the service pointed at the double."""
    source, pre = new_repo(tmp_path / "source", PRE_CONTRACT)
    github_api.create_repo(REPO, source)
    service = make_service(
        github_api_url=github_api.url,
        github_token=TOKEN,
        github_git_url_template=github_api.git_url_template,
        github_seconds_between_writes="0",
        import_spares="0",
        contract_recheck_spacing_s="0.5",
    )
    service.start_api()
    return service, pre


def _wait(predicate: Callable[[], bool], service, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, service.logs()
        time.sleep(0.2)


def _states(github_api, sha: str) -> list[str]:
    return [
        s["state"]
        for s in github_api.repos[REPO].statuses
        if s["sha"] == sha and s["context"] == CONTEXT
    ]


def _open(github_api, service, pre: str, branch: str, files: dict[str, str | None]) -> int:
    head = commit(github_api.repos[REPO].path, branch, files, parent=pre, message=branch)
    number = github_api.open_pull(REPO, head=branch, title=f"[None][feat] {branch}")
    service.webhook("pull_request", github_api.pull_request_event(REPO, number, "opened"), branch)
    _wait(lambda: _states(github_api, head) == ["success"], service)
    return number


def _checked_against(service, number: int, base: str) -> bool:
    """Whether the service recorded a check of PR ``number`` against base commit ``base``."""
    url = f"sqlite:///{(service.data_dir / 'repairbot.db').resolve()}"
    with session_scope(url) as session:
        found = session.scalar(
            select(ContractCheck.id).where(
                ContractCheck.number == number, ContractCheck.base_sha == base
            )
        )
        return found is not None


def _head(github_api, number: int) -> str:
    return str(github_api.repos[REPO].refresh(number)["head"]["sha"])


def _review_writes(github_api) -> int:
    return sum(
        len(github_api.calls_to(method, r"/reviews|/pulls/comments/"))
        for method in ("POST", "PUT", "PATCH")
    )


def test_the_contract_lands_and_only_the_violating_pr_fails_until_its_suggestions_land(
    story, github_api
):
    service, pre = story
    # Before the contract, overriding forward is how workers are written: all three are green.
    docs = _open(github_api, service, pre, "docs", {"README.md": "# spec\n\nHow to.\n"})
    util = _open(
        github_api, service, pre, "util", {"spec/util.py": "def twice(x):\n    return 2 * x\n"}
    )
    ngram = _open(github_api, service, pre, "ngram", {"spec/ngram.py": worker("NGramWorker")})
    bad_head = _head(github_api, ngram)

    # The contract lands on main (its commit also moves EagleWorker to _forward_impl).
    bare = github_api.repos[REPO].path
    landed = commit(bare, "main", CONTRACT, parent=pre, message="DraftWorkerBase contract")
    push = {
        "ref": "refs/heads/main",
        "before": pre,
        "after": landed,
        "created": False,
        "deleted": False,
        "forced": False,
        "repository": github_api.repos[REPO].json(github_api.url),
        "sender": {"login": "maintainer", "type": "User"},
    }
    service.webhook("push", push, "push-contract")

    _wait(lambda: _states(github_api, bad_head) == ["success", "failure"], service)
    for number in (docs, util):
        _wait(lambda n=number: _checked_against(service, n, landed), service)
        assert _states(github_api, _head(github_api, number)) == ["success"]
    [failure] = [
        s
        for s in github_api.repos[REPO].statuses
        if s["sha"] == bad_head and s["state"] == "failure"
    ]
    assert (
        failure["description"]
        == "1 contract violation introduced: NGramWorker (forbidden-override)"
    )
    [review] = reviews_of(github_api, REPO, ngram)
    assert review["commit_id"] == bad_head
    assert reviews_of(github_api, REPO, docs) == reviews_of(github_api, REPO, util) == []

    # The author commits the review's suggestions as GitHub's button does, and pushes.
    fixed_head = apply_suggestions(github_api, REPO, ngram)
    sync = github_api.pull_request_event(REPO, ngram, "synchronize")
    service.webhook("pull_request", sync, "sync-1")
    _wait(lambda: _states(github_api, fixed_head) == ["success"], service)
    assert len(reviews_of(github_api, REPO, ngram)) == 1  # resolved in place, never a second
    statuses, review_writes = len(github_api.repos[REPO].statuses), _review_writes(github_api)

    # A second synchronize for the same head (nothing pushed) posts nothing new. A PR opened
    # after it is checked after it (one worker, in order): its status proves ours was done.
    service.webhook("pull_request", sync, "sync-2")
    _open(github_api, service, landed, "later", {"README.md": "# spec\n\nLater.\n"})
    assert len(github_api.repos[REPO].statuses) == statuses + 1  # only the later PR's
    assert _review_writes(github_api) == review_writes
    assert _states(github_api, fixed_head) == ["success"]
