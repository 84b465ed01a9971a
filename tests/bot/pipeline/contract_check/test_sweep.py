"""The pre-merge sweep of a PR (``sweep_pull``) on real git repositories: a PR that adds a
subclass against a contract its base changed gets the learned migration as a suggestion."""

from __future__ import annotations

from pathlib import Path

from bot.forges.review_plan import plan_review
from bot.pipeline.contract_check.sweep import Swept, sweep_pull
from tests.fixers.git_repos import git
from tests.fixers.learned import history_repos as repos
from tests.fixers.learned.test_static_breaks import TRUCK


def test_a_pr_adding_a_subclass_against_the_changed_contract_gets_the_learned_suggestion(
    tmp_path: Path,
) -> None:
    repo = repos.shipping_repo(tmp_path / "shipping")
    base = git(repo, "rev-parse", "main").strip()
    git(repo, "checkout", "-q", "-b", "trucks")
    head = repos.commit(repo, "add trucks", {"shipping/truck.py": TRUCK})
    swept = sweep_pull(
        repo, base, head, repository="acme/shipping", trees_dir=tmp_path / "trees", max_files=100
    )
    assert isinstance(swept, Swept)
    # Only the PR's own class: RailCarrier, missed on the base, is not this PR's to fix.
    assert [(v.kind, v.class_qualname) for v in swept.introduced] == [
        ("learned-migration", "shipping.truck.TruckCarrier")
    ]
    [change] = swept.changes
    assert "    def ship(self, parcel, *, priority=0):\n" in change.after
    plan = plan_review(head, swept.introduced, swept.changes, lambda rel: change.before)
    [suggestion] = plan.suggestions
    assert suggestion.path == "shipping/truck.py"
    assert suggestion.replacement == "    def ship(self, parcel, *, priority=0):\n"


def test_a_pr_whose_history_alone_would_teach_a_rule_learns_nothing_from_it(
    tmp_path: Path,
) -> None:
    repo = repos.new_repo(tmp_path / "shipping")
    repos.shipping_before(repo)
    base = git(repo, "rev-parse", "main").strip()
    git(repo, "checkout", "-q", "-b", "stranger")
    repos.shipping_contract_commit(repo)  # the PR itself changes the contract
    head = repos.commit(repo, "add trucks", {"shipping/truck.py": TRUCK})
    swept = sweep_pull(
        repo, base, head, repository="acme/shipping", trees_dir=tmp_path / "trees", max_files=100
    )
    assert isinstance(swept, Swept)
    # Rules are learned from the base branch's history only: the PR's commits teach nothing.
    assert [v for v in swept.introduced if v.kind == "learned-migration"] == []
