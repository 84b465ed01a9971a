"""Tasks read the settings their process gave them (``configure_tasks``), else the environment's."""

from __future__ import annotations

from bot.config import get_settings
from bot.pipeline.reconcile import reconcile
from bot.queue import celery_app
from tests.conftest import make_settings


def test_configured_settings_reach_the_tasks_and_their_broker(tmp_path):
    settings = make_settings(tmp_path / "data")
    try:
        assert celery_app.configure_tasks(settings) is celery_app.app
        assert celery_app.task_settings() is settings and reconcile.settings is settings
        conf = celery_app.app.conf
        assert conf.broker_url == settings.resolved_broker_url
        assert conf.broker_transport_options == settings.broker_transport_options
        replaced = settings.model_copy(update={"task_max_retries": 1})
        celery_app.configure_tasks(replaced)
        assert reconcile.settings is replaced
    finally:
        celery_app.unconfigure_tasks()


def test_a_process_that_never_configured_its_tasks_reads_the_environment():
    celery_app.unconfigure_tasks()
    assert celery_app.task_settings() is get_settings()
    assert reconcile.settings is get_settings()


def test_the_test_fixture_injects_them(task_settings, tmp_path):
    settings = make_settings(tmp_path / "data")
    assert task_settings(settings) is settings and reconcile.settings is settings
