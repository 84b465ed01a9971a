"""Tasks read the settings their process gave them (``configure_tasks``), else the environment's."""

from __future__ import annotations

from pathlib import Path

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


def test_the_worker_imports_exactly_the_modules_that_define_tasks() -> None:
    celery_app.app.loader.import_default_modules()
    defined = {
        task.__module__
        for name, task in celery_app.app.tasks.items()
        if name.startswith("repairbot.")
    }
    assert set(celery_app.task_modules()) == defined
    assert set(celery_app.app.conf.include) == defined


def test_a_new_stage_is_found_by_its_own_file(tmp_path: Path) -> None:
    root = tmp_path / "bot"
    (root / "pipeline").mkdir(parents=True)
    (root / "intake").mkdir()
    (root / "pipeline" / "summarise.py").write_text(
        '@app.task(name="repairbot.summarise", bind=True)\ndef summarise(self, run_id): ...\n'
    )
    (root / "pipeline" / "helpers.py").write_text("def plain(): ...\n")
    assert celery_app.task_modules(root) == ["bot.pipeline.summarise"]
