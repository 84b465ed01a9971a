"""GitLab's settings: read from ``REPAIRBOT_`` variables with the rest, a placeholder webhook
token refused outside development, the API root and git remote derived from the base URL."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.config import Settings

REAL = {"github_webhook_secret": "a" * 32, "ci_token": "b" * 32, "repository_roots": ["/srv"]}


def test_gitlab_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("REPAIRBOT_FORGE", "gitlab")
    monkeypatch.setenv("REPAIRBOT_GITLAB_URL", "https://gitlab.example.com/")
    monkeypatch.setenv("REPAIRBOT_GITLAB_TOKEN", "glpat-0123456789abcdef")
    monkeypatch.setenv("REPAIRBOT_GITLAB_MAX_TRACE_BYTES", "1048576")
    settings = Settings()
    assert settings.forge == "gitlab" and settings.gitlab_max_trace_bytes == 1 << 20
    assert settings.gitlab_api_url == "https://gitlab.example.com/api/v4"
    assert settings.gitlab_remote("gpu/sub/trt") == "https://gitlab.example.com/gpu/sub/trt.git"
    assert settings.gitlab_token is not None
    assert settings.gitlab_token.get_secret_value() == "glpat-0123456789abcdef"
    monkeypatch.setenv("REPAIRBOT_GITLAB_GIT_URL_TEMPLATE", "ssh://git@host:2222/{project}.git")
    assert Settings().gitlab_remote("g/p") == "ssh://git@host:2222/g/p.git"


def test_an_unknown_forge_and_a_tiny_trace_limit_are_refused():
    with pytest.raises(ValidationError, match="forge"):
        Settings(forge="bitbucket")
    with pytest.raises(ValidationError, match="gitlab_max_trace_bytes"):
        Settings(gitlab_max_trace_bytes=100)


@pytest.mark.parametrize("token", ["secret", "changeme-later", "short-token"])
def test_a_placeholder_webhook_token_is_refused_outside_development(token):
    with pytest.raises(ValidationError, match="REPAIRBOT_GITLAB_WEBHOOK_TOKEN"):
        Settings(environment="production", gitlab_webhook_token=token, **REAL)
    assert Settings(gitlab_webhook_token=token).gitlab_webhook_token is not None  # development


def test_a_real_webhook_token_or_none_is_accepted_in_production():
    assert Settings(environment="production", **REAL).gitlab_webhook_token is None
    accepted = Settings(environment="production", gitlab_webhook_token="t" * 24, **REAL)
    assert accepted.gitlab_webhook_token is not None
