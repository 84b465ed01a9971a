"""Tasks read the settings their process gave them (``configure_tasks``), else the environment's."""

from __future__ import annotations

from pathlib import Path

from bot.config import get_settings
from bot.pipeline.reconcile.task import reconcile
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


def test_the_worker_imports_exactly_the_modules_that_define_tasks() -> None:
    celery_app.app.loader.import_default_modules()
    defined = {
        task.__module__
        for name, task in celery_app.app.tasks.items()
        if name.startswith("repairbot.")
    }
    assert set(celery_app.TASK_MODULES) == defined
    assert set(celery_app.app.conf.include) == defined


def test_every_module_that_defines_a_task_is_listed() -> None:
    bot = Path(celery_app.__file__).resolve().parents[1]
    wearing = {
        ".".join(path.relative_to(bot.parent).with_suffix("").parts)
        for path in bot.rglob("*.py")
        if "@app.task(" in path.read_text(encoding="utf-8") and path.name != "celery_app.py"
    }
    assert wearing == set(celery_app.TASK_MODULES)
