"""Buildkite's settings, read with the others from ``REPAIRBOT_`` variables."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.config import Settings

REAL = {
    "environment": "production",
    "github_webhook_secret": "a-real-webhook-secret-0123456789",
    "ci_token": "a-real-ci-token-0123456789",
    "repository_roots": ["/srv/repos"],
}


def test_they_are_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("REPAIRBOT_BUILDKITE_API_TOKEN", "bkua_0123")
    monkeypatch.setenv(
        "REPAIRBOT_BUILDKITE_REPOSITORIES", '{"git@git.example:acme/trt.git": "/srv/repos/trt"}'
    )
    monkeypatch.setenv("REPAIRBOT_BUILDKITE_MAX_LOG_BYTES", "1048576")
    settings = Settings()
    assert settings.buildkite_api_token is not None
    assert settings.buildkite_api_token.get_secret_value() == "bkua_0123"
    assert settings.buildkite_repositories == {"git@git.example:acme/trt.git": "/srv/repos/trt"}
    assert settings.buildkite_max_log_bytes == 1 << 20
    assert settings.buildkite_webhook_token is None  # Buildkite is off until it is set


@pytest.mark.parametrize("token", ["changeme", "short", "change-this-buildkite-token"])
def test_a_placeholder_webhook_token_is_refused_outside_development(token):
    with pytest.raises(ValidationError, match="REPAIRBOT_BUILDKITE_WEBHOOK_TOKEN"):
        Settings(**REAL, buildkite_webhook_token=token)
    assert Settings(environment="development", buildkite_webhook_token=token)
    assert Settings(**REAL, buildkite_webhook_token="a-real-buildkite-token-0123")


@pytest.mark.parametrize("field", ["buildkite_max_log_bytes", "buildkite_signature_max_age_s"])
def test_values_that_cannot_work_are_refused(field):
    with pytest.raises(ValidationError):
        Settings(**{field: 0})
