"""A PR pipeline's failure: repaired on the base head when its violations are there (a real git
repository with the legacy workers on ``main``), left to the PR head when they are the PR's own."""

from __future__ import annotations

import pytest

from bot.cli.demo_target import build_target
from bot.git import git
from bot.pipeline.pr_pipeline import base_commit_for, root_cause_there
from fixers.contracts import SPEC_WORKER_CONTRACT
from fixers.sweep import fix, sweep, write_changes


@pytest.fixture(scope="module")
def legacy(tmp_path_factory):
    """A repository whose ``main`` has the legacy workers (violations), and its head."""
    source = tmp_path_factory.mktemp("pr-pipeline") / "repo"
    return source, build_target(source)


def _base_commit(repo, base_ref, classes, tmp_path):
    return base_commit_for(
        repo=repo,
        base_ref=base_ref,
        contract=SPEC_WORKER_CONTRACT,
        classes=classes,
        worktrees_dir=tmp_path,
    )


def test_violations_on_the_base_head_make_it_the_commit_repaired(legacy, tmp_path):
    repo, head = legacy
    assert _base_commit(repo, "main", ["MTPEagleDynamicTreeWorker", "_Worker"], tmp_path) == head
    assert _base_commit(repo, "main", [], tmp_path) is None  # no class named: the PR head
    assert list(tmp_path.iterdir()) == []  # its worktree is gone


def test_a_class_only_in_the_pr_is_not_the_base_branch_s_fault(legacy, tmp_path):
    repo, _ = legacy
    assert _base_commit(repo, "main", ["FeatureWorkerOfThisPR"], tmp_path) is None


def test_a_base_without_violations_or_a_branch_that_is_not_there(legacy, tmp_path):
    repo, head = legacy
    git(repo, "checkout", "--quiet", "-b", "fixed", head)
    try:
        write_changes(repo, fix(repo, [SPEC_WORKER_CONTRACT], imports=False))
        git(repo, "commit", "--quiet", "-am", "Fix the workers")
        assert _base_commit(repo, "fixed", ["MTPEagleDynamicTreeWorker"], tmp_path) is None
    finally:
        git(repo, "checkout", "--quiet", "main")
    assert _base_commit(repo, "no-such-branch", ["MTPEagleDynamicTreeWorker"], tmp_path) is None
    assert _base_commit(repo, None, [], tmp_path) is None


def test_root_cause_there_matches_qualified_and_short_class_names(legacy):
    repo, _ = legacy
    found = sweep(repo, [SPEC_WORKER_CONTRACT], infer=False).violations
    assert root_cause_there(found, ["legacy_spec.mtp.MTPWorker"])
    assert root_cause_there(found, ["MTPWorker", "Elsewhere"])
    assert not root_cause_there(found, ["Elsewhere"])
    assert not root_cause_there([], [])
    assert not root_cause_there(found, [])  # no class named: the PR's own diff may be the cause
