"""A PR pipeline's failure: its root cause is on the base head when a class the log names
violates the contract there (a real git repository with the legacy workers on ``main``); never
when no class is named or the class is the PR's own."""

from __future__ import annotations

import pytest

from bot.cli.demo_target import build_target
from bot.git import git
from bot.pipeline.fan_out.pr_pipeline import root_cause_at, root_cause_there
from fixers.contracts.model import SPEC_WORKER_CONTRACT
from fixers.sweep.run import fix, sweep, write_changes


@pytest.fixture(scope="module")
def legacy(tmp_path_factory):
    """A repository whose ``main`` has the legacy workers (violations), and its head."""
    source = tmp_path_factory.mktemp("pr-pipeline") / "repo"
    return source, build_target(source)


def _root_cause_at(repo, commit, classes, tmp_path):
    return root_cause_at(
        repo=repo,
        commit=commit,
        contract=SPEC_WORKER_CONTRACT,
        classes=classes,
        worktrees_dir=tmp_path,
    )


def test_violations_on_the_base_head_are_the_root_cause(legacy, tmp_path):
    repo, head = legacy
    assert _root_cause_at(repo, head, ["MTPEagleDynamicTreeWorker", "_Worker"], tmp_path)
    assert not _root_cause_at(repo, head, [], tmp_path)  # no class named: the PR's own
    assert list(tmp_path.iterdir()) == []  # its worktree is gone


def test_a_class_only_in_the_pr_is_not_the_base_branch_s_fault(legacy, tmp_path):
    repo, head = legacy
    assert not _root_cause_at(repo, head, ["FeatureWorkerOfThisPR"], tmp_path)


def test_a_base_without_violations(legacy, tmp_path):
    repo, head = legacy
    git(repo, "checkout", "--quiet", "-b", "fixed", head)
    try:
        write_changes(repo, fix(repo, [SPEC_WORKER_CONTRACT], imports=False))
        git(repo, "commit", "--quiet", "-am", "Fix the workers")
        fixed = git(repo, "rev-parse", "HEAD").strip()
        assert not _root_cause_at(repo, fixed, ["MTPEagleDynamicTreeWorker"], tmp_path)
    finally:
        git(repo, "checkout", "--quiet", "main")


def test_root_cause_there_matches_qualified_and_short_class_names(legacy):
    repo, _ = legacy
    found = sweep(repo, [SPEC_WORKER_CONTRACT], infer=False).violations
    assert root_cause_there(found, ["legacy_spec.mtp.MTPWorker"])
    assert root_cause_there(found, ["MTPWorker", "Elsewhere"])
    assert not root_cause_there(found, ["Elsewhere"])
    assert not root_cause_there([], [])
    assert not root_cause_there(found, [])  # no class named: the PR's own diff may be the cause
