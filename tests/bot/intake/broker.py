"""What reached the test's filesystem broker: the tasks sent, with their arguments."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any


def sent_tasks(settings: Any) -> list[tuple[str, list[Any]]]:
    """``(task name, args)`` of every message in ``settings``' broker folder, oldest first."""
    folder = Path(settings.broker_transport_options["data_folder_in"])
    sent = []
    for path in sorted(folder.glob("*.msg")):
        message = json.loads(path.read_text())
        args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        sent.append((message["headers"]["task"], args))
    return sent


def tasks_to_run(settings: Any) -> list[tuple[str, list[Any]]]:
    """:func:`sent_tasks` with each dispatch message (``bot.queue.enqueue``) replaced by the
    tasks a worker sends for it, in its place."""
    expanded: list[tuple[str, list[Any]]] = []
    for name, args in sent_tasks(settings):
        if name == "repairbot.dispatch":
            task_name, calls = args
            expanded += [(task_name, call) for call in calls]
        else:
            expanded.append((name, args))
    return expanded
