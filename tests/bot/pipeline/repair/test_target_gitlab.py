"""Where a repair happens with ``REPAIRBOT_FORGE=gitlab``: a GitLab project fetched from the
GitLab double into its mirror, on the trusted default branch."""

from __future__ import annotations

import pytest

from bot.cli.demo_target import build_target
from bot.db.models import RunState
from bot.forges.gitlab.forge import GitLabForge
from bot.pipeline.repair.run_state import Stop
from bot.pipeline.repair.start import RunContext
from bot.pipeline.repair.target import Target, resolve_target
from bot.pipeline.task_base import TransientError
from fixers.contracts.model import SPEC_WORKER_CONTRACT

PROJECT = "gpu/inference/trt"


def _context(commit: str, *, attempts: int = 1, repository: str = PROJECT) -> RunContext:
    return RunContext(
        run_id=1, own_fix=None, signature="contract-forward-override",
        contract=SPEC_WORKER_CONTRACT, repository=repository, commit=commit, base_ref=None,
        build_url=None, classes=["DraftWorker"], tests=[], ticket="None", attempts=attempts,
    )  # fmt: skip


@pytest.fixture
def head(gitlab_api, tmp_path):
    source = tmp_path / "source"
    commit = build_target(source)
    gitlab_api.create_project(PROJECT, source)
    return commit


def test_a_gitlab_project_is_repaired_in_its_mirror_at_the_failing_commit(gl_settings, head):
    target = resolve_target(gl_settings, _context(head))
    assert isinstance(target, Target) and isinstance(target.forge, GitLabForge)
    assert target.name == PROJECT and target.base_ref == "main" and target.untrusted is None
    assert target.base_sha == head == target.trusted_tip
    assert target.repo == gl_settings.github_mirrors_dir.resolve() / "_gitlab" / f"{PROJECT}.git"


def test_without_a_token_the_run_ends_with_the_reason(gl_settings, head):
    unconfigured = gl_settings.model_copy(update={"gitlab_token": None})
    stop = resolve_target(unconfigured, _context(head))
    assert isinstance(stop, Stop) and stop.state is RunState.ERROR
    assert "REPAIRBOT_GITLAB_TOKEN" in stop.reason


def test_a_commit_gitlab_does_not_have_is_retried_then_an_error(gl_settings, head):
    with pytest.raises(TransientError):
        resolve_target(gl_settings, _context("f" * 40))
    stop = resolve_target(gl_settings, _context("f" * 40, attempts=gl_settings.task_max_retries))
    assert isinstance(stop, Stop) and stop.state is RunState.ERROR


def test_with_the_github_forge_a_gitlab_path_is_not_a_hosted_repository(gl_settings, head):
    github = gl_settings.model_copy(update={"forge": "github"})
    stop = resolve_target(github, _context(head))
    assert isinstance(stop, Stop) and stop.state is RunState.ERROR  # refused as a local path
