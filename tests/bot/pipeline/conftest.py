"""Fixtures shared by the pipeline's tests."""

from __future__ import annotations

import pytest

from bot.pipeline.contract_check.tree import forget_caches
from tests.bot.pipeline.pr_repos import CONTRACT, PRE_CONTRACT, commit, new_repo

REPO = "acme/spec"


@pytest.fixture
def spec_repo(github_api, tmp_path):
    """``acme/spec`` on the double: ``main`` has the contract; ``pre`` is the commit before it."""
    forget_caches()  # each test starts cold: the cache must not carry one test into the next
    source, pre = new_repo(tmp_path / "source", PRE_CONTRACT)
    repo = github_api.create_repo(REPO, source)
    commit(repo.path, "main", CONTRACT, parent=pre, message="DraftWorkerBase contract")
    return repo, pre
