"""``bot.pipeline.dispatch``: a dispatch message's tasks sent each; a name that is not one of
repairbot's registered tasks (or is dispatch itself), or calls that are not argument lists, are
refused, not sent. The real filesystem broker."""

from __future__ import annotations

import pytest

from bot.pipeline.dispatch import dispatch
from bot.queue import names as task_names
from tests.bot.intake.broker import sent_tasks


def test_each_call_becomes_its_own_task(settings, task_settings):
    task_settings(settings)
    dispatch.run(task_names.PROCESS_DELIVERY, [[3], [4]])
    assert sent_tasks(settings) == [
        (task_names.PROCESS_DELIVERY, [3]),
        (task_names.PROCESS_DELIVERY, [4]),
    ]


@pytest.mark.parametrize(
    "name", ["celery.backend_cleanup", task_names.DISPATCH, "os.system", "repairbot.no_such_task"]
)
def test_a_name_outside_repairbots_tasks_is_refused(settings, task_settings, name):
    task_settings(settings)
    with pytest.raises(ValueError, match="not a task to dispatch"):
        dispatch.run(name, [[1]])
    assert sent_tasks(settings) == []


@pytest.mark.parametrize("calls", [[3, 4], "[[3]]", [[3], {"id": 4}]])
def test_calls_that_are_not_argument_lists_are_refused(settings, task_settings, calls):
    task_settings(settings)
    with pytest.raises(ValueError, match="list of argument lists"):
        dispatch.run(task_names.TRIAGE, calls)
    assert sent_tasks(settings) == []
