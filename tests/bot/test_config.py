from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.config import Settings


def test_defaults_are_the_embedded_configuration(tmp_path, monkeypatch):
    for key in list(__import__("os").environ):
        if key.startswith("REPAIRBOT_"):
            monkeypatch.delenv(key)
    settings = Settings(data_dir=tmp_path)
    assert settings.environment == "development"
    assert settings.resolved_database_url == f"sqlite:///{tmp_path.resolve()}/repairbot.db"
    assert settings.resolved_broker_url == "durable-files://localhost/"
    assert settings.broker_transport_options["data_folder_in"] == str(tmp_path.resolve() / "broker")


def test_redis_gets_the_visibility_timeout_and_other_brokers_none(tmp_path, monkeypatch):
    monkeypatch.setenv("REPAIRBOT_BROKER_VISIBILITY_TIMEOUT_S", "20")
    redis = Settings(data_dir=tmp_path, broker_url="redis://127.0.0.1:6379/0")
    assert redis.broker_transport_options == {"visibility_timeout": 20}
    rabbit = Settings(data_dir=tmp_path, broker_url="amqp://guest:guest@127.0.0.1:5672//")
    assert rabbit.broker_transport_options == {}


def test_environment_variables_use_the_prefix(monkeypatch):
    monkeypatch.setenv("REPAIRBOT_DATABASE_URL", "postgresql+psycopg://db/repairbot")
    monkeypatch.setenv(
        "REPAIRBOT_CI_PIPELINE_TOKENS", '{"L0_MergeRequest_PR": "token-0123456789abcdef"}'
    )
    settings = Settings()
    # libpq's connect_timeout added (REPAIRBOT_DATABASE_CONNECT_TIMEOUT_S), unless the URL names one
    assert settings.resolved_database_url == "postgresql+psycopg://db/repairbot?connect_timeout=5"
    assert (
        settings.ci_pipeline_tokens["L0_MergeRequest_PR"].get_secret_value()
        == "token-0123456789abcdef"
    )


@pytest.mark.parametrize("environment", ["test", "production"])
def test_placeholder_secrets_are_refused_outside_development(environment):
    with pytest.raises(ValidationError) as raised:
        Settings(environment=environment)
    assert "REPAIRBOT_GITHUB_WEBHOOK_SECRET" in str(raised.value)
    assert "REPAIRBOT_CI_TOKEN" in str(raised.value)


def test_real_secrets_are_accepted_in_production():
    settings = Settings(
        environment="production",
        github_webhook_secret="a" * 32,
        ci_token="b" * 32,
        repository_roots=["/srv/repos"],
    )
    assert settings.github_webhook_secret.get_secret_value() == "a" * 32


@pytest.mark.parametrize("environment", ["test", "production"])
def test_repository_roots_are_required_outside_development(environment, monkeypatch):
    secrets = {"github_webhook_secret": "a" * 32, "ci_token": "b" * 32}
    with pytest.raises(ValidationError, match="set REPAIRBOT_REPOSITORY_ROOTS outside development"):
        Settings(environment=environment, **secrets)
    monkeypatch.setenv("REPAIRBOT_REPOSITORY_ROOTS", '["/srv/repos", "/data/targets"]')
    settings = Settings(environment=environment, **secrets)
    assert settings.repository_roots == [Path("/srv/repos"), Path("/data/targets")]


def test_the_local_forge_defaults_to_the_data_dir_in_development(tmp_path):
    settings = Settings(data_dir=tmp_path)
    assert settings.local_repository_roots == [tmp_path]
    assert settings.worktrees_dir in settings.private_dirs
    extra = Settings(data_dir=tmp_path, repository_roots=[tmp_path / "repos"])
    assert extra.local_repository_roots == [tmp_path, tmp_path / "repos"]


@pytest.mark.parametrize("field", ["REPAIRBOT_WORKER_QUEUES", "REPAIRBOT_VERIFY_FALLBACK_QUEUES"])
def test_queue_names_are_checked_at_start(field, monkeypatch):
    monkeypatch.setenv(field, '["repair", "gpu/../../x"]')
    with pytest.raises(ValidationError, match=r"queue 'gpu/\.\./\.\./x' must be"):
        Settings()


def test_the_body_deadline_is_a_setting(monkeypatch):
    monkeypatch.setenv("REPAIRBOT_READ_TIMEOUT_S", "3.5")
    assert Settings().read_timeout_s == 3.5


def test_the_command_prefix_defaults_to_repairbot_and_matches_the_grammar():
    from bot.commands.grammar import DEFAULT_PREFIX

    assert Settings().command_prefix == DEFAULT_PREFIX == "/repairbot"
    assert Settings(command_prefix="/trt-fix").command_prefix == "/trt-fix"


@pytest.mark.parametrize(
    "prefix",
    ["/bot", "repairbot", "/", "/Repairbot", "/repair bot", "/-x", "/x\u202e", "/" + "a" * 33],
)
def test_a_command_prefix_that_is_not_a_slash_word_or_is_bot_is_refused(prefix):
    with pytest.raises(ValidationError, match="REPAIRBOT_COMMAND_PREFIX"):
        Settings(command_prefix=prefix)


def test_the_default_data_dir_is_the_users_not_the_current_directory(monkeypatch, tmp_path):
    for key in list(__import__("os").environ):
        if key.startswith("REPAIRBOT_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    assert Settings().data_dir == tmp_path / "xdg" / "repairbot"


def test_a_database_url_that_names_its_connect_timeout_keeps_it() -> None:
    given = "postgresql+psycopg://db/repairbot?sslmode=require&connect_timeout=30"
    assert Settings(database_url=given).resolved_database_url == given
    other = Settings(database_url="postgresql+psycopg://db/r?sslmode=require")
    assert other.resolved_database_url.endswith("?sslmode=require&connect_timeout=5")
