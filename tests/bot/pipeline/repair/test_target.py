"""Where a repair happens, by provenance, on real local repositories: the failing commit when a
trusted branch reaches it, the base's tip when the log's class violates the contract there, and
otherwise an untrusted commit, which nothing built on is ever pushed from."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli.demo_target import build_target
from bot.git import commit_all, git
from bot.pipeline.repair.run_state import Stop
from bot.pipeline.repair.start import RunContext
from bot.pipeline.repair.target import Target, resolve_target
from fixers.contracts.model import SPEC_WORKER_CONTRACT
from fixers.sweep.run import fix, write_changes
from tests.conftest import make_settings

FEATURE_WORKER = (
    "from runtime.speculative.interface import SpecWorkerBase\n"
    "\n\n"
    "class FeatureWorker(SpecWorkerBase):\n"
    "    def forward(self, *args, **kwargs):\n"
    "        return None\n"
)


@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    """``main`` with the legacy workers (violations) and ``clean`` with them fixed; a branch
    ``feature`` off ``clean`` that adds a violating worker of its own."""
    repo = tmp_path_factory.mktemp("placement") / "repo"
    legacy = build_target(repo)
    git(repo, "checkout", "--quiet", "-b", "clean")
    write_changes(repo, fix(repo, [SPEC_WORKER_CONTRACT], imports=False))
    clean = commit_all(repo, "Fix the workers")
    git(repo, "checkout", "--quiet", "-b", "feature")
    (repo / "legacy_spec" / "feature.py").write_text(FEATURE_WORKER)
    feature = commit_all(repo, "A feature worker")
    git(repo, "checkout", "--quiet", "main")
    return repo, {"legacy": legacy, "clean": clean, "feature": feature}


def _context(repo: Path, commit: str, base_ref: str | None, classes: list[str]) -> RunContext:
    return RunContext(
        run_id=1,
        own_fix=None,
        signature="contract-forward-override",
        contract=SPEC_WORKER_CONTRACT,
        repository=str(repo),
        commit=commit,
        base_ref=base_ref,
        build_url=None,
        classes=classes,
        tests=[],
        ticket="None",
        attempts=1,
    )


def _target(tmp_path, repos, commit, base_ref, classes=(), **overrides) -> Target:
    repo, _ = repos
    settings = make_settings(tmp_path / "data", repository_roots=[repo.parent], **overrides)
    found = resolve_target(settings, _context(repo, commit, base_ref, [*classes]))
    assert not isinstance(found, Stop), found
    return found


def test_a_commit_on_the_default_branch_is_repaired_where_it_failed(tmp_path, repos):
    _, commits = repos
    found = _target(tmp_path, repos, commits["legacy"], "main")
    assert (found.base_sha, found.trusted_tip, found.untrusted) == (
        commits["legacy"],
        commits["legacy"],
        None,
    )
    # A report naming no branch: the operator's checkout (HEAD) is the trusted tip.
    assert _target(tmp_path, repos, commits["legacy"], None).untrusted is None


def test_a_branch_commit_whose_violation_is_only_its_own_is_untrusted(tmp_path, repos):
    _, commits = repos
    # "clean" is trusted here, "feature" is not: the feature's violation is its own.
    found = _target(
        tmp_path, repos, commits["feature"], "clean", ["FeatureWorker"], trusted_branches=["clean"]
    )
    assert found.untrusted is not None and found.base_sha == commits["feature"]
    assert found.trusted_tip == commits["clean"]
    assert "is not on clean (a fork's or a PR branch's commit)" in found.untrusted.reason


def test_the_base_tip_is_repaired_when_the_logs_class_violates_there(tmp_path, repos):
    _, commits = repos
    git(repos[0], "branch", "--force", "pr", commits["feature"])
    # The PR's head fails because main (the default branch) still has MTPWorker's violation.
    found = _target(tmp_path, repos, commits["feature"], "main", ["MTPWorker"])
    assert (found.base_sha, found.untrusted) == (commits["legacy"], None)


def test_a_base_branch_that_is_not_trusted_makes_every_other_commit_untrusted(tmp_path, repos):
    _, commits = repos
    found = _target(tmp_path, repos, commits["feature"], "clean", ["FeatureWorker"])
    assert found.untrusted is not None and found.trusted_tip is None
    assert "clean is neither the default branch (main) nor one of REPAIRBOT_TRUSTED_BRANCHES" in (
        found.untrusted.reason
    )
    # A SHA passed as the base is no branch at all.
    sha_base = _target(tmp_path, repos, commits["feature"], commits["clean"], ["FeatureWorker"])
    assert sha_base.untrusted is not None and sha_base.trusted_tip is None
