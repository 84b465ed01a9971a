"""The opt-out label through signed ``pull_request`` deliveries and ``process_delivery``: a PR
carrying it is recorded as opted out and gets no contract check (no status, no review); removing
the label lifts that, and the next push is checked again."""

from __future__ import annotations

from sqlalchemy import select

from bot.db.records.opt_outs import PrOptOut
from bot.db.session import session_scope
from bot.forges.github.api import GitHubApi
from bot.forges.github.events import PullRequestEvent
from bot.pipeline.contract_check.task import check_pull
from bot.pipeline.memory.opt_out_label import on_labels
from tests.bot.pipeline.contract_check.test_triggers import (
    REPO,
    _checks_sent,
    _open,
    queued,
    spec_repo,
)
from tests.fakes.github_deliveries import deliver_and_process

__all__ = ["queued", "spec_repo"]  # the fixtures, shared with the contract-trigger tests


# GitHub's description of a PR's labels differs per webhook action: the archive fields each has.
ARCHIVE_FIELDS = {"opened": ("archived_by",), "labeled": ("archived_at", "archived_by")}


def label(name: str, number: int = 1, action: str = "opened") -> dict:
    """A label as GitHub's ``pull_request.labels`` lists it in ``action``'s payload."""
    shape = {
        "id": 900 + number,
        "node_id": f"LA_{number}",
        "url": f"https://api.github.com/repos/{REPO}/labels/{name}",
        "name": name,
        "description": None,
        "color": "ededed",
        "default": False,
    }
    return shape | dict.fromkeys(ARCHIVE_FIELDS.get(action, ()))


def _event(github_api, number: int, action: str, *names: str) -> dict:
    """The ``action`` payload of PR ``number`` carrying the labels ``names``."""
    with github_api.lock:
        github_api.repos[REPO].pulls[number]["labels"] = [
            label(name, i, action) for i, name in enumerate(names)
        ]
    return github_api.pull_request_event(REPO, number, action)


def _rows(settings) -> list[tuple[int, str, str, str | None]]:
    with session_scope(settings.resolved_database_url) as session:
        rows = session.scalars(select(PrOptOut).order_by(PrOptOut.id))
        return [(r.pr_number, r.via, r.opted_out_by, r.lifted_by) for r in rows]


def test_a_labelled_pr_is_left_alone_until_the_label_goes(queued, github_api, spec_repo):
    number = _open(github_api, spec_repo, "work")
    opened = _event(github_api, number, "opened", "bug", "repairbot:opt-out")
    _, notes = deliver_and_process(queued, "pull_request", opened, "pr-opened")
    assert f"opt-out-label: #{number} opted out by its `repairbot:opt-out` label" in notes
    assert any(n.startswith("contract-check: not checked: ") for n in notes), notes
    assert _checks_sent(queued) == [] and _rows(queued) == [(number, "label", "maintainer", None)]

    # A late payload from before the label (a redelivery, an edit) does not lift the opt-out.
    stale = _event(github_api, number, "synchronize", "bug")
    _, notes = deliver_and_process(queued, "pull_request", stale, "pr-pushed-late")
    assert f"opt-out-label: #{number} has no `repairbot:opt-out` label" in notes
    assert _rows(queued) == [(number, "label", "maintainer", None)]

    unlabeled = _event(github_api, number, "unlabeled", "bug")
    unlabeled["label"] = label("repairbot:opt-out", action="unlabeled")
    _, notes = deliver_and_process(queued, "pull_request", unlabeled, "pr-unlabeled")
    assert f"opt-out-label: #{number}: the `repairbot:opt-out` label was removed" in " ".join(notes)
    assert _rows(queued) == [(number, "label", "maintainer", "maintainer")]

    pushed = _event(github_api, number, "synchronize", "bug")
    deliver_and_process(queued, "pull_request", pushed, "pr-pushed")
    assert _checks_sent(queued) == [([REPO, number], None)]


def test_an_opted_out_pr_posts_nothing_when_its_check_runs(queued, github_api, spec_repo):
    """A check already queued (or a re-check after a contract push) finds the opt-out."""
    number = _open(github_api, spec_repo, "work")
    labeled = _event(github_api, number, "labeled", "repairbot:opt-out")
    deliver_and_process(queued, "pull_request", labeled, "pr-labeled")
    before = len(github_api.calls)
    said = check_pull(queued, GitHubApi(queued), REPO, number)
    assert said.startswith(f"not checked: {REPO}#{number} opted out by maintainer with its label")
    assert len(github_api.calls) == before  # not even a read


def _parsed(labels: tuple[str, ...] | None) -> PullRequestEvent:
    return PullRequestEvent(
        action="edited",
        repository=REPO,
        number=5,
        url="",
        merged=False,
        head_ref="h",
        head_sha="1" * 40,
        base_ref="main",
        merge_commit_sha=None,
        author="alice",
        sender="bob",
        labels=labels,
    )


def test_the_label_is_configurable_and_compared_without_case(queued):
    settings = queued.model_copy(update={"opt_out_label": "No-Bot"})
    with session_scope(settings.resolved_database_url) as session:
        assert on_labels(session, settings, _parsed(("repairbot:opt-out",))) == (
            "#5 has no `No-Bot` label"
        )
        assert on_labels(session, settings, _parsed(("no-bot",))) == (
            "#5 opted out by its `No-Bot` label"
        )
        assert on_labels(session, settings, _parsed(("NO-BOT",))).endswith("(already)")
        assert on_labels(session, settings, _parsed(None)) == "no labels in the payload"
    assert _rows(settings) == [(5, "label", "bob", None)]
