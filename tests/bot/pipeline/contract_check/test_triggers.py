"""Which deliveries queue contract checks: PR events, and pushes that change a contract; a
flood of one PR's events queues one check and asks GitHub nothing.

Deliveries go through the webhook endpoint (signed) and ``process_delivery``; what was queued is
read back from the test's filesystem broker.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from bot.db.models import Delivery, utcnow
from bot.db.records.contract_checks import ContractCheck, QueuedCheck
from bot.db.session import session_scope
from bot.pipeline.contract_check.task import contract_check
from bot.pipeline.contract_check.tree import forget_caches
from bot.pipeline.contract_check.triggers import contract_changes, contract_recheck
from bot.pipeline.reconcile.task import reconcile_once
from bot.queue import names as task_names
from tests.bot.pipeline.pr_repos import CONTRACT, PRE_CONTRACT, commit, new_repo, worker
from tests.fakes.github_deliveries import deliver_and_process
from tests.fakes.github_git import git_out

REPO = "acme/spec"


@pytest.fixture
def spec_repo(github_api, tmp_path):
    """``acme/spec`` on the double, ``main`` before the contract."""
    forget_caches()
    source, pre = new_repo(tmp_path / "source", PRE_CONTRACT)
    return github_api.create_repo(REPO, source), pre


@pytest.fixture
def queued(gh_settings, task_settings):
    """The settings the delivered tasks read; the broker folder starts empty."""
    return task_settings(gh_settings)


def _sent(settings, task: str) -> list[tuple[list[Any], datetime | None]]:
    """``(args, eta)`` of every ``task`` message in the broker, oldest first."""
    folder = Path(settings.broker_transport_options["data_folder_in"])
    sent = []
    for path in sorted(folder.glob("*.msg")):
        message = json.loads(path.read_text())
        if message["headers"]["task"] != task:
            continue
        args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        eta = message["headers"].get("eta")
        sent.append((args, datetime.fromisoformat(eta) if eta else None))
    return sent


def _checks_sent(settings) -> list[tuple[list[Any], datetime | None]]:
    return _sent(settings, task_names.CONTRACT_CHECK)


def _push(settings, github_api, before: str, after: str, delivery: str) -> str:
    """Deliver a push to ``main``, then run the comparison it queued, as the worker would:
    what the comparison said."""
    earlier = len(_sent(settings, task_names.CONTRACT_RECHECK))
    _, notes = deliver_and_process(
        settings, "push", _push_payload(github_api, before, after), delivery
    )
    assert (
        f"contract-recheck: contract comparison of {before[:12]}..{after[:12]} on main queued"
        in notes
    )
    queued = _sent(settings, task_names.CONTRACT_RECHECK)[earlier:]
    assert [args for args, _ in queued] == [[REPO, "main", before, after]]
    return str(contract_recheck.apply(args=queued[0][0]).get())


def _open(github_api, spec_repo, branch: str, *, base: str = "main", login: str = "alice") -> int:
    repo, pre = spec_repo
    if base != "main":
        commit(repo.path, base, {}, parent=pre, message=f"{base} branch")
    commit(repo.path, branch, {f"spec/{branch}.py": "X = 1\n"}, parent=pre, message=branch)
    with github_api.lock:
        return repo.add_pull(github_api.next_id(), branch, base, branch, "", login)


def _push_payload(github_api, before: str, after: str, ref: str = "refs/heads/main") -> dict:
    repo = github_api.repos[REPO]
    return {
        "ref": ref,
        "before": before,
        "after": after,
        "created": False,
        "deleted": False,
        "forced": False,
        "repository": repo.json(github_api.url),
        "sender": {"login": "maintainer", "type": "User"},
    }


@pytest.mark.parametrize(
    ("action", "changes", "checked"),
    [
        ("opened", None, True),
        ("synchronize", None, True),
        ("reopened", None, True),
        ("edited", {"base": {"ref": {"from": "release"}}}, True),
        ("edited", {"title": {"from": "old title"}}, False),
        ("closed", None, False),
        ("labeled", None, False),
    ],
)
def test_pr_events_that_can_change_the_answer_queue_a_check(
    queued, github_api, spec_repo, action, changes, checked
):
    number = _open(github_api, spec_repo, "work")
    payload = github_api.pull_request_event(REPO, number, action)
    if changes is not None:
        payload["changes"] = changes

    _, notes = deliver_and_process(queued, "pull_request", payload, f"pr-{action}")

    assert _checks_sent(queued) == ([([REPO, number], None)] if checked else []), notes
    assert any(note.startswith("contract-check: ") for note in notes)


def test_a_pr_by_a_bot_is_left_to_its_own_pipeline(queued, github_api, spec_repo):
    number = _open(github_api, spec_repo, "fix", login="repairbot[bot]")
    payload = github_api.pull_request_event(REPO, number, "opened")

    _, notes = deliver_and_process(queued, "pull_request", payload, "pr-bot")

    assert _checks_sent(queued) == [] and "one of ours" in " ".join(notes)


def test_contract_checks_can_be_turned_off(gh_settings, task_settings, github_api, spec_repo):
    settings = task_settings(gh_settings.model_copy(update={"contract_check": False}))
    number = _open(github_api, spec_repo, "work")
    payload = github_api.pull_request_event(REPO, number, "opened")

    _, notes = deliver_and_process(settings, "pull_request", payload, "pr-off")

    assert _checks_sent(settings) == [] and "contract checks are off" in " ".join(notes)


def test_a_push_that_changes_a_contract_rechecks_open_prs_capped_and_spaced(
    gh_settings, task_settings, github_api, spec_repo
):
    settings = task_settings(
        gh_settings.model_copy(
            update={"contract_recheck_max_prs": 2, "contract_recheck_spacing_s": 5.0}
        )
    )
    repo, pre = spec_repo
    numbers = [_open(github_api, spec_repo, f"work{i}") for i in range(3)]
    _open(github_api, spec_repo, "elsewhere", base="release")
    _open(github_api, spec_repo, "ours", login="repairbot[bot]")
    after = commit(repo.path, "main", CONTRACT, parent=pre, message="the contract")

    note = _push(settings, github_api, pre, after, "push-contract")

    assert "new DraftWorkerBase: forward -> _forward_impl (inferred from spec/base.py:4)" in note
    assert note.endswith("re-checking 2 open PR(s) into main, 1 left out (at most 2 per push)")
    sent = _checks_sent(settings)
    assert len({args[1] for args, _ in sent}) == 2  # two of the three PRs into main
    assert all(args[0] == REPO and args[1] in numbers for args, _ in sent)
    # One at once, the next 5 s later (sent in the same millisecond: their files in any order).
    assert sorted(eta is None for _, eta in sent) == [False, True]
    assert _left_behind(settings) == []


def test_a_push_that_changes_no_contract_rechecks_nothing(queued, github_api, spec_repo):
    repo, pre = spec_repo
    _open(github_api, spec_repo, "work")
    docs = commit(repo.path, "main", {"README.md": "# spec\n\nDocs.\n"}, parent=pre, message="d")
    code = commit(
        repo.path, "main", {"spec/mtp.py": worker("MTPWorker")}, parent=docs, message="worker"
    )

    assert _push(queued, github_api, pre, docs, "p1") == "push to main changes no contract"
    assert _push(queued, github_api, docs, code, "p2") == "push to main changes no contract"
    assert _checks_sent(queued) == [] and _left_behind(queued) == []


def test_a_push_to_a_branch_no_pr_targets_costs_no_fetch(queued, github_api, spec_repo):
    repo, pre = spec_repo
    after = commit(repo.path, "main", CONTRACT, parent=pre, message="the contract")

    said = _push(queued, github_api, pre, after, "p3")

    assert said == "no open PR into main: nothing to re-check"
    assert not queued.github_mirrors_dir.exists()


def test_a_force_push_from_an_unknown_commit_rechecks_to_be_safe(queued, github_api, spec_repo):
    _, pre = spec_repo
    number = _open(github_api, spec_repo, "work")
    unknown = "1234567890abcdef1234567890abcdef12345678"

    said = _push(queued, github_api, unknown, pre, "p4")

    assert said.startswith("push to main: main before the push is unknown")
    assert [args for args, _ in _checks_sent(queued)] == [[REPO, number]]


@pytest.mark.parametrize(
    ("ref", "change", "said"),
    [
        ("refs/tags/v1", {}, "refs/tags/v1: not a branch that moved"),
        ("refs/heads/old", {"deleted": True}, "refs/heads/old: not a branch that moved"),
        ("refs/heads/new", {"created": True}, "new is new: no PR targets it yet"),
    ],
)
def test_pushes_that_move_no_branch_compare_nothing(
    queued, github_api, spec_repo, ref, change, said
):
    _, pre = spec_repo
    payload = {**_push_payload(github_api, pre, pre, ref=ref), **change}

    _, notes = deliver_and_process(queued, "push", payload, f"p-{ref}")

    assert f"contract-recheck: {said}" in notes
    assert _sent(queued, task_names.CONTRACT_RECHECK) == []


def test_the_builtin_contract_gaining_its_guard_is_a_change(gh_settings, tmp_path):
    forget_caches()
    plain = "class SpecWorkerBase:\n    def forward(self, x):\n        return x\n"
    guarded = (
        "from abc import abstractmethod\n\n\nclass SpecWorkerBase:\n"
        "    def __init_subclass__(cls, **kwargs):\n"
        '        if "forward" in cls.__dict__:\n'
        '            raise TypeError("implement _forward_impl")\n\n'
        "    def forward(self, x):\n        return self._forward_impl(x)\n\n"
        "    @abstractmethod\n    def _forward_impl(self, x): ...\n"
    )
    source, before = new_repo(tmp_path / "trt", {"tensorrt/spec.py": plain})
    bare = source / ".git"
    after = commit(bare, "main", {"tensorrt/spec.py": guarded}, parent=before, message="guard")
    moved = commit(
        bare, "main", {"tensorrt/other.py": "Y = 2\n"}, parent=after, message="unrelated"
    )

    assert contract_changes(gh_settings, "nvidia/trt", bare, before, after) == [
        "new SpecWorkerBase: forward -> _forward_impl (inferred from tensorrt/spec.py:4)"
    ]
    assert contract_changes(gh_settings, "nvidia/trt", bare, after, moved) == []
    assert len(git_out(bare, "worktree", "list").splitlines()) == 1  # no worktree was added
    assert _left_behind(gh_settings) == []


def _left_behind(settings) -> list[str]:
    root = settings.worktrees_dir
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


# ----- floods (issue 36): one queued check per PR, the reconciler waits for a backlog -------


def _api_calls(github_api) -> int:
    return len([c for c in github_api.calls if not c.path.startswith("/_blobs/")])


def test_a_flood_of_one_head_queues_one_check_and_asks_github_nothing(
    queued,
    github_api,
    spec_repo,
):
    number = _open(github_api, spec_repo, "work")
    payload = github_api.pull_request_event(REPO, number, "synchronize")
    before = _api_calls(github_api)
    for i in range(40):
        deliver_and_process(queued, "pull_request", payload, f"flood-{i}")
    assert _checks_sent(queued) == [([REPO, number], None)]
    assert _api_calls(github_api) == before  # no REST call, no fetch: the database answered
    contract_check.apply(args=[REPO, number]).get()  # the one check runs
    with session_scope(queued.resolved_database_url) as session:
        assert session.scalars(select(QueuedCheck)).all() == []
        [answer] = session.scalars(select(ContractCheck)).all()
    # The same head again, answered, with the payload's base: nothing queued.
    payload["pull_request"]["base"]["sha"] = answer.base_sha
    _, notes = deliver_and_process(queued, "pull_request", payload, "flood-after")
    assert any("was answered" in note for note in notes) and len(_checks_sent(queued)) == 1
    # A new head: the next check.
    payload["pull_request"]["head"]["sha"] = "f" * 40
    deliver_and_process(queued, "pull_request", payload, "new-head")
    assert len(_checks_sent(queued)) == 2


def test_the_reconciler_waits_for_a_backlog_to_drain(queued, github_api, spec_repo):
    number = _open(github_api, spec_repo, "work")
    payload = github_api.pull_request_event(REPO, number, "opened")
    deliver_and_process(queued, "pull_request", payload, "opened")
    url = queued.resolved_database_url
    with session_scope(url) as session:  # both look lost: old, unfinished
        long_ago = utcnow() - timedelta(hours=1)
        session.execute(update(QueuedCheck).values(queued_at=long_ago))
        lost = Delivery(source="github", key="github:lost", event="ping", body=b"{}")
        session.add(lost)
        session.flush()
        lost_id = lost.id
        session.execute(update(Delivery).values(received_at=long_ago, dispatched_at=long_ago))
    # The check's message still waits in the queue: nothing is sent again.
    assert reconcile_once(queued) == 0
    # The queue drains (a broker restart lost the messages) and the work is still unfinished.
    for path in Path(queued.broker_transport_options["data_folder_in"]).glob("*.msg"):
        path.unlink()
    assert reconcile_once(queued) == 2
    assert [args for args, _ in _sent(queued, task_names.PROCESS_DELIVERY)] == [[lost_id]]
    assert _checks_sent(queued) == [([REPO, number], None)]
