"""Every task has one typed start, whose parameters are the task's own."""

from __future__ import annotations

import inspect

from bot.queue import celery_app, names
from bot.queue.starts import STARTS


def _parameters(function: object, skip: int) -> list[tuple[str, object]]:
    found = list(inspect.signature(function).parameters.values())[skip:]  # type: ignore[arg-type]
    return [(p.name, p.annotation) for p in found if p.kind is not p.KEYWORD_ONLY]


def test_each_start_takes_exactly_its_tasks_arguments() -> None:
    celery_app.app.loader.import_default_modules()
    for name, start in STARTS.items():
        task = celery_app.app.tasks[name]
        assert _parameters(start, 1) == _parameters(task.run, 0), name  # (session, ...) vs (...)


def test_every_task_a_stage_starts_has_a_start() -> None:
    celery_app.app.loader.import_default_modules()
    sent_by_stages = {name for name in celery_app.app.tasks if name.startswith("repairbot.")} - {
        names.RECONCILE,
        names.DISPATCH,
    }  # started by the beat and by the broker's own sender
    assert sent_by_stages == set(STARTS)
