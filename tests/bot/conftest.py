"""Settings that point the GitHub forge at the fake GitHub API, and a target repository on it."""

from __future__ import annotations

import pytest

from bot.cli.demo_target import build_target
from tests.fakes.github_api import TOKEN

REPO = "acme/trt"


@pytest.fixture
def gh_settings(settings, github_api):
    """The ``settings`` fixture (SQLite and PostgreSQL) plus the fake GitHub, token mode."""
    return settings.model_copy(
        update={
            "github_api_url": github_api.url,
            "github_token": __import__("pydantic").SecretStr(TOKEN),
            "github_git_url_template": github_api.git_url_template,
            "github_seconds_between_writes": 0.0,
            "github_retry_backoff_s": 0.05,
            "github_command_users": [],
        }
    )


@pytest.fixture
def target(github_api, tmp_path):
    """``acme/trt`` on the fake GitHub: the legacy workers (a forward override, a stub double)."""
    source = tmp_path / "source"
    head = build_target(source)
    repo = github_api.create_repo(REPO, source)
    return repo, head
